/*
 * fork_exit: a host that forks while another of its threads is inside the server preload, and
 * whose child exits without exec (as a host's fork helper may). Run with the preload and
 * RSHM_MCA_server_preload_verbose=1:
 *   1. PMIx_server_init: the preload opens its store and registers its exit hook;
 *   2. stderr becomes a full pipe nobody reads, and a thread calls PMIx_server_register_nspace:
 *      the preload's log line blocks in write(2) while the preload holds its lock;
 *   3. once that thread is seen blocked in write(2) on fd 2, fork; the child calls exit(0);
 *   4. the parent waits for the child (10 s at most), prints "child exited N", and exits with
 *      the thread still blocked: its own exit hook must not wait for the lock either.
 * "child hung" and status 1 when the child did not exit; status 2 when the thread never
 * blocked (the test would check nothing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

static int blocked_tid;

static void *register_job(void *arg)
{
    (void) arg;
    uint32_t size = 1;
    pmix_info_t info;
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, "forked");
    PMIX_INFO_LOAD(&info, PMIX_JOB_SIZE, &size, PMIX_UINT32);
    __atomic_store_n(&blocked_tid, (int) syscall(SYS_gettid), __ATOMIC_RELEASE);
    /* Blocks in the preload's log line, holding its lock, for the rest of the process's life. */
    PMIx_server_register_nspace(ns, 1, &info, 1, NULL, NULL);
    return NULL;
}

/* Whether thread `tid` is blocked in write(2) on fd 2. */
static int in_stderr_write(int tid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        return 0;
    }
    long nr = -1;
    unsigned long fd = ~0UL;
    int ok = NULL != fgets(line, sizeof line, f) && 2 == sscanf(line, "%ld %lx", &nr, &fd);
    fclose(f);
    return ok && SYS_write == nr && 2 == fd;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    static pmix_server_module_t module;
    pmix_status_t rc = PMIx_server_init(&module, NULL, 0);
    printf("init %s\n", PMIx_Error_string(rc));
    fflush(stdout);
    if (PMIX_SUCCESS != rc) {
        return 3;
    }

    /* stderr: a pipe whose read end stays open and unread, filled to the last byte. */
    int p[2];
    if (0 != pipe(p) || dup2(p[1], 2) < 0) {
        return 3;
    }
    close(p[1]);
    fcntl(2, F_SETFL, O_NONBLOCK);
    static char junk[4096];
    for (size_t chunk = sizeof junk; chunk > 0; chunk /= 2) {
        while (write(2, junk, chunk) > 0) {
        }
    }
    fcntl(2, F_SETFL, 0);

    pthread_t t;
    pthread_create(&t, NULL, register_job, NULL);
    int blocked = 0;
    for (int i = 0; i < 1000 && !blocked; i++) {
        int tid = __atomic_load_n(&blocked_tid, __ATOMIC_ACQUIRE);
        blocked = 0 != tid && in_stderr_write(tid);
        if (!blocked) {
            sleep_ms(10);
        }
    }
    if (!blocked) {
        printf("register never blocked\n");
        fflush(stdout);
        _exit(2);
    }

    pid_t child = fork();
    if (0 == child) {
        exit(0);
    }
    int status = 0;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(child, &status, WNOHANG) == child) {
            printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            fflush(stdout);
            exit(0);
        }
        sleep_ms(10);
    }
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    printf("child hung\n");
    fflush(stdout);
    _exit(1);
}
