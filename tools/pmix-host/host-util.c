/* host-util.c - pmix-host's small utilities. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"
#include "host.h"

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pmix-host: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p && n) {
        die("out of memory");
    }
    return p;
}

long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void op_cb(pmix_status_t status, void *cbdata)
{
    waiter_t *w = cbdata;
    pthread_mutex_lock(&w->m);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

pmix_status_t wait_op(waiter_t *w)
{
    pthread_mutex_lock(&w->m);
    while (!w->done) {
        pthread_cond_wait(&w->c, &w->m);
    }
    w->done = false;
    pthread_mutex_unlock(&w->m);
    return w->status;
}
