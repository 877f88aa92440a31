/* pointer_client.c - an unmodified libpmix client for client-shim/preload/tests/pointer_soak.rs.
 *
 * usage: pointer_client FIFO GENERATIONS RANKS
 *
 * PMIx_Init, then for each generation g = 1..GENERATIONS: PMIx_Get with PMIX_GET_POINTER_VALUES
 * of rank 0's "test.card" until it is of generation g (the test publishes g once the client
 * reported g - 1), then the cards of ranks 1..RANKS-1, PMIX_JOB_SIZE, and rank 0's card again
 * (the same stored value asked again: the same pointer). Every pointer handed out for g must
 * still hold g's card after the others were asked, and once the store has moved on to g + 1,
 * until it is asked again (valid until replaced). After each generation
 * "seen G GETS" goes to the FIFO; "pid PID" first, "done GETS" last. Exit status 0, or 1 with a
 * message on stderr. */
#define _GNU_SOURCE
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RANKS 64

static pmix_info_t *pointers;
static long gets;

static void fail(const char *what, unsigned long g)
{
    fprintf(stderr, "pointer_client: generation %lu: %s\n", g, what);
    exit(1);
}

/* PMIx_Get in pointer mode: the library's value, never released by the caller. */
static pmix_value_t *get(const char *nspace, pmix_rank_t rank, const char *key, unsigned long g)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&p, nspace, rank);
    gets++;
    if (PMIX_SUCCESS != PMIx_Get(&p, key, pointers, 1, &v) || NULL == v) {
        fail(key, g);
    }
    return v;
}

/* The generation a card names ("G:RANK:..."), checking its rank. */
static unsigned long card_gen(const pmix_value_t *v, pmix_rank_t rank, unsigned long g)
{
    if (PMIX_STRING != v->type || NULL == v->data.string) {
        fail("a card that is not a string", g);
    }
    char *end;
    unsigned long n = strtoul(v->data.string, &end, 10);
    if (':' != *end || strtoul(end + 1, &end, 10) != rank || ':' != *end) {
        fail("a card of another rank", g);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (4 != argc) {
        fprintf(stderr, "usage: pointer_client FIFO GENERATIONS RANKS\n");
        return 1;
    }
    unsigned long generations = strtoul(argv[2], NULL, 10);
    unsigned long ranks = strtoul(argv[3], NULL, 10);
    if (ranks < 1 || ranks > MAX_RANKS) {
        fail("RANKS out of range", 0);
    }
    pmix_proc_t me;
    if (PMIX_SUCCESS != PMIx_Init(&me, NULL, 0)) {
        fail("PMIx_Init", 0);
    }
    FILE *fifo = fopen(argv[1], "w");
    if (NULL == fifo) {
        fail("cannot open the FIFO", 0);
    }
    setvbuf(fifo, NULL, _IOLBF, 0);
    fprintf(fifo, "pid %ld\n", (long)getpid());

    bool yes = true;
    PMIX_INFO_CREATE(pointers, 1);
    PMIX_INFO_LOAD(&pointers[0], PMIX_GET_POINTER_VALUES, &yes, PMIX_BOOL);

    pmix_value_t *held[MAX_RANKS];
    for (unsigned long g = 1; g <= generations; g++) {
        /* Wait for generation g: Gets until rank 0's card is g's. */
        for (long spins = 0;; spins++) {
            held[0] = get(me.nspace, 0, "test.card", g);
            unsigned long n = card_gen(held[0], 0, g);
            if (n == g) {
                break;
            }
            if (n > g || spins > 100000000L) {
                fail("rank 0's card never reached this generation", g);
            }
        }
        /* The store moved on, but the others' cards of g - 1 were not asked again yet: their
         * pointers still hold g - 1's values. */
        for (pmix_rank_t r = 1; g > 1 && r < ranks; r++) {
            if (card_gen(held[r], r, g) != g - 1) {
                fail("a pointer changed when the store moved on, before it was asked again", g);
            }
        }
        for (pmix_rank_t r = 1; r < ranks; r++) {
            held[r] = get(me.nspace, r, "test.card", g);
            if (card_gen(held[r], r, g) != g) {
                fail("a card of another generation", g);
            }
        }
        pmix_value_t *size = get(me.nspace, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, g);
        if (PMIX_UINT32 != size->type || 0 == size->data.uint32) {
            fail("PMIX_JOB_SIZE", g);
        }
        if (get(me.nspace, 0, "test.card", g) != held[0]) {
            fail("a new pointer for the same stored value", g);
        }
        for (pmix_rank_t r = 0; r < ranks; r++) {
            if (card_gen(held[r], r, g) != g) {
                fail("a pointer changed before its value was replaced", g);
            }
        }
        fprintf(fifo, "seen %lu %ld\n", g, gets);
    }
    fprintf(fifo, "done %ld\n", gets);
    fclose(fifo);
    PMIX_INFO_FREE(pointers, 1);
    if (PMIX_SUCCESS != PMIx_Finalize(NULL, 0)) {
        fail("PMIx_Finalize", generations);
    }
    return 0;
}
