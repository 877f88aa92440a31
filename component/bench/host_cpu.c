/* Run a command and report the CPU time of that process alone (all its threads, not the
 * children it reaped), its wall time, its peak RSS and the peak size of a directory while it
 * runs. component/bench/commit-storm.sh runs tools/pmix-host under it: the server's cost
 * without its clients'.
 *
 *   host_cpu [-w DIR] [-o FILE] -- PROG ARGS...
 *
 * Prints (to FILE, else stderr) one line:
 *   host_cpu user_ms <t> sys_ms <t> children_ms <t> wall_ms <t> vmhwm_kb <n> peak_dir_bytes <n>
 * and exits with the command's status (128 + signal when killed).
 *
 * wait4() and getrusage(RUSAGE_CHILDREN) count the command's reaped children (the clients) in
 * with it; so the command is waited for with WNOWAIT, which leaves it a zombie whose
 * /proc/<pid>/stat still holds utime/stime (its threads) apart from cutime/cstime (its
 * children), read before it is reaped. DIR is sampled every 20 ms (allocated bytes of its
 * regular files, recursively), as is VmHWM while the process lives. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long dir_total;

static int add_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) path;
    (void) ftw;
    if (FTW_F == flag && S_ISREG(st->st_mode)) {
        dir_total += (long long) st->st_blocks * 512;
    }
    return 0;
}

static long long dir_bytes(const char *dir)
{
    dir_total = 0;
    if (dir) {
        nftw(dir, add_file, 16, FTW_PHYS);
    }
    return dir_total;
}

static long vmhwm_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmHWM: %ld", &kb)) {
            break;
        }
    }
    fclose(f);
    return kb;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "-w") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else {
            break;
        }
    }
    if (i >= argc - 1 || strcmp(argv[i], "--")) {
        fprintf(stderr, "usage: host_cpu [-w DIR] [-o FILE] -- PROG ARGS...\n");
        return 2;
    }
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        perror("host_cpu: fork");
        return 2;
    }
    if (0 == pid) {
        execvp(argv[i + 1], argv + i + 1);
        fprintf(stderr, "host_cpu: exec %s: %s\n", argv[i + 1], strerror(errno));
        _exit(127);
    }
    long long peak_dir = 0;
    long hwm = 0;
    siginfo_t si;
    for (;;) {
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT | WNOHANG) < 0) {
            perror("host_cpu: waitid");
            return 2;
        }
        if (si.si_pid == pid) {
            break;
        }
        long long d = dir_bytes(dir);
        long h = vmhwm_kb(pid);
        peak_dir = d > peak_dir ? d : peak_dir;
        hwm = h > hwm ? h : hwm;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    double wall = now_ms() - t0;
    /* the zombie's stat: fields after the command name's closing parenthesis */
    char path[64], stat[2048] = "";
    unsigned long long ut = 0, st = 0;
    long long cut = 0, cst = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(stat, 1, sizeof(stat) - 1, f);
        stat[n] = '\0';
        fclose(f);
    }
    char *p = strrchr(stat, ')');
    if (!p || 4 != sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
                          &ut, &st, &cut, &cst)) {
        fprintf(stderr, "host_cpu: cannot read %s\n", path);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    double tick = 1000.0 / sysconf(_SC_CLK_TCK);
    FILE *o = out ? fopen(out, "w") : stderr;
    if (!o) {
        perror("host_cpu: output");
        o = stderr;
    }
    fprintf(o, "host_cpu user_ms %.0f sys_ms %.0f children_ms %.0f wall_ms %.0f vmhwm_kb %ld "
               "peak_dir_bytes %lld\n",
            ut * tick, st * tick, (cut + cst) * tick, wall, hwm, peak_dir);
    if (o != stderr) {
        fclose(o);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
