/*
 * client-util.c - see client-util.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "client-util.h"

#include <libgen.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common.h"

#define LONG_VALUE 512

int line_fd = STDOUT_FILENO;

void line(const char *fmt, ...)
{
    char *buf = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    char *out = realloc(buf, (size_t) n + 1);
    if (NULL == out) {
        free(buf);
        return;
    }
    out[n++] = '\n';
    for (ssize_t off = 0, w; off < n; off += w) {
        w = write(line_fd, out + off, (size_t) (n - off));
        if (w <= 0) {
            break;
        }
    }
    free(out);
}

uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char) p[i]) * 0x100000001b3ULL;
    }
    return h;
}

char *answer_text(pmix_status_t rc, const pmix_value_t *val)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (NULL == out) {
        return NULL;
    }
    if (PMIX_SUCCESS == rc && NULL != val) {
        fprintf(out, "%s ", PMIx_Data_type_string(val->type));
        fmt_value(out, val);
    } else {
        fputs("- -", out);
    }
    fclose(out);
    return text;
}

void get_line(pmix_rank_t myrank, pmix_rank_t rank, const char *realm, const char *name,
              pmix_status_t rc, char *text)
{
    char who[16];
    if (PMIX_RANK_WILDCARD == rank) {
        snprintf(who, sizeof(who), "*");
    } else {
        snprintf(who, sizeof(who), "%u", rank);
    }
    if (NULL != text && strlen(text) > LONG_VALUE) {
        size_t nlen = strlen(text);
        unsigned long long h = (unsigned long long) fnv1a(text, nlen);
        char *type_end = strchr(text, ' '); /* keep the type, digest the value */
        if (NULL != type_end) {
            *type_end = '\0';
        }
        line("get %u %s %s %s %s %s len=%zu fnv1a=%016llx", myrank, who, realm, name,
             PMIx_Error_string(rc), text, nlen, h);
    } else {
        line("get %u %s %s %s %s %s", myrank, who, realm, name, PMIx_Error_string(rc),
             NULL == text ? "" : text);
    }
}

pmix_status_t put_str(pmix_scope_t scope, const char *key, const char *fmt, ...)
{
    char s[512];
    pmix_value_t v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof(s), fmt, ap);
    va_end(ap);
    PMIX_VALUE_LOAD(&v, s, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(scope, key, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc;
}

pmix_status_t put_global_cards(pmix_rank_t rank, const char *card)
{
    unsigned char blob[100];
    pmix_value_t v;
    pmix_status_t rc = put_str(PMIX_GLOBAL, CARD, "%s", card);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    uint64_t num = 1000003ULL * rank + 7;
    PMIX_VALUE_LOAD(&v, &num, PMIX_UINT64);
    rc = PMIx_Put(PMIX_GLOBAL, CARD_NUM, &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    for (size_t i = 0; i < sizeof(blob); i++) {
        blob[i] = (unsigned char) (i * 7 + rank);
    }
    pmix_byte_object_t bo = {.bytes = (char *) blob, .size = sizeof(blob)};
    PMIX_VALUE_LOAD(&v, &bo, PMIX_BYTE_OBJECT);
    rc = PMIx_Put(PMIX_GLOBAL, CARD_BLOB, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc;
}

int job_size(const char *prog, const pmix_proc_t *me, uint32_t *size)
{
    pmix_proc_t wild;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
    if (PMIX_SUCCESS != rc || NULL == val || PMIX_UINT32 != val->type) {
        fprintf(stderr, "%s: PMIX_JOB_SIZE: %s\n", prog, PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return -1;
    }
    *size = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    return 0;
}

int post_and_fence(const char *prog, const pmix_proc_t *me, pmix_status_t put_rc)
{
    pmix_proc_t wild;
    pmix_status_t rc = put_rc;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (PMIX_SUCCESS == rc) {
        rc = PMIx_Commit();
    }
    if (PMIX_SUCCESS == rc) {
        pmix_info_t collect;
        bool t = true;
        PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &t, PMIX_BOOL);
        rc = PMIx_Fence(&wild, 1, &collect, 1);
        PMIX_INFO_DESTRUCT(&collect);
    }
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "%s: rank %u: put/commit/fence: %s\n", prog, me->rank,
                PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return -1;
    }
    return 0;
}

int finish(const char *prog, const pmix_proc_t *me)
{
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Fence(&wild, 1, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "%s: rank %u: last fence: %s\n", prog, me->rank, PMIx_Error_string(rc));
    }
    rc = PMIx_Finalize(NULL, 0);
    line("done %u %s", me->rank, PMIx_Error_string(rc));
    return PMIX_SUCCESS == rc ? 0 : 1;
}

void short_hostname(char *host, size_t size)
{
    host[0] = '\0';
    gethostname(host, size - 1);
    host[size - 1] = '\0';
    host[strcspn(host, ".")] = '\0';
}

void map_lines(pmix_rank_t myrank, bool (*want)(const char *path),
               void (*each)(const char *path, const char *dir, bool deleted, void *arg), void *arg)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char buf[8192];
    size_t nmaps = 0;
    if (NULL == maps) {
        line("map %u none cannot-read-maps -", myrank);
        return;
    }
    while (fgets(buf, sizeof(buf), maps)) {
        char perms[8], path[4096], dcopy[4096];
        buf[strcspn(buf, "\n")] = '\0';
        /* addr perms offset dev inode path */
        if (2 != sscanf(buf, "%*s %7s %*s %*s %*s %4095[^\n]", perms, path) || !want(path)) {
            continue;
        }
        char *del = strstr(path, " (deleted)");
        if (NULL != del) {
            *del = '\0';
        }
        snprintf(dcopy, sizeof(dcopy), "%s", path);
        const char *dir = dirname(dcopy);
        struct statfs fs;
        bool tmpfs = 0 == statfs(dir, &fs) && TMPFS_MAGIC == (unsigned long) fs.f_type;
        line("map %u %s %s %s%s", myrank, perms, tmpfs ? "tmpfs" : "not-tmpfs", path,
             NULL != del ? " (deleted)" : "");
        nmaps++;
        if (NULL != each) {
            each(path, dir, NULL != del, arg);
        }
    }
    fclose(maps);
    if (0 == nmaps) {
        line("map %u none - -", myrank);
    }
}
