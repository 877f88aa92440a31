/*
 * client-util.h - what the test clients of tools/slurm (job-client) and tools/multinode
 * (node-client) share: their output lines, the "get" line of an answer, the cards they post, the
 * start (Put, Commit, Fence) and end of a rank, and the listing of the store's mapped files.
 */
#ifndef PMIX_HOST_CLIENT_UTIL_H
#define PMIX_HOST_CLIENT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmix.h>

/* A key asked, with the name its lines print. */
struct key {
    const char *name;
    const char *key;
};
#define K(x) {#x, x}
#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

/* The cards' keys. */
#define CARD "rshm.card"
#define CARD_NUM "rshm.card.num"
#define CARD_BLOB "rshm.card.blob"

/* The file descriptor line() writes to (default: standard output). */
extern int line_fd;

/* A printf-formatted line in one write(2): several ranks' lines share one output. */
void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* FNV-1a (64 bit) of n bytes: a short, stable stand-in for a long value's text. */
uint64_t fnv1a(const char *p, size_t n);

/* An answer's text, "<TYPE> <canonical value>", or "- -" without a value (malloc'ed; NULL when
 * out of memory). */
char *answer_text(pmix_status_t rc, const pmix_value_t *val);

/* The line "get <myrank> <rank|*> <realm> <name> <status> <text>"; a text past 512 characters
 * is printed as its type and "len=N fnv1a=HEX" of it, so that every line stays one short write. */
void get_line(pmix_rank_t myrank, pmix_rank_t rank, const char *realm, const char *name,
              pmix_status_t rc, char *text);

/* PMIx_Put of a printf-formatted string. */
pmix_status_t put_str(pmix_scope_t scope, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The PMIX_GLOBAL cards every client posts: CARD = card, CARD_NUM (uint64) and CARD_BLOB
 * (100 bytes), both derived from the rank. */
pmix_status_t put_global_cards(pmix_rank_t rank, const char *card);

/* The job's size (PMIX_JOB_SIZE); on failure a message on stderr and PMIx_Finalize. */
int job_size(const char *prog, const pmix_proc_t *me, uint32_t *size);

/* PMIx_Commit of what `put` posted (when it succeeded), then PMIx_Fence with
 * PMIX_COLLECT_DATA; on failure a message on stderr and PMIx_Finalize. */
int post_and_fence(const char *prog, const pmix_proc_t *me, pmix_status_t put_rc);

/* The last fence (nobody finalizes, and so unmaps, before every rank has looked at the store),
 * PMIx_Finalize and the line "done <myrank> <status>". Returns the exit status. */
int finish(const char *prog, const pmix_proc_t *me);

/* This host's name up to its first '.'. */
void short_hostname(char *host, size_t size);

/* Every file of /proc/self/maps that `want` accepts: the line
 * "map <myrank> <perms> <tmpfs|not-tmpfs> <path>[ (deleted)]", then each(path, its directory,
 * deleted, arg) when `each` is set. "map <myrank> none - -" when there is none. */
void map_lines(pmix_rank_t myrank, bool (*want)(const char *path),
               void (*each)(const char *path, const char *dir, bool deleted, void *arg), void *arg);

#endif
