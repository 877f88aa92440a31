/* Built only through pkg-config (rshm-server, rshm-client): open a store, register a tiny job,
 * attach to it, read one key, tear down. Exit 0 on success. */
/* pmix_common.h uses strdup and strncasecmp without declaring its feature macros: under
 * -std=c11 they need _GNU_SOURCE (or _DEFAULT_SOURCE) before any include (docs/ffi.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <rshm_client.h>
#include <rshm_server.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        pmix_status_t rc_ = (call);                                                 \
        if (PMIX_SUCCESS != rc_) {                                                  \
            fprintf(stderr, "%s: %d\n", #call, rc_);                                \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main(void)
{
    rshm_server_t *s = NULL;
    pmix_info_t info[2];
    uint32_t size = 2;
    memset(info, 0, sizeof(info));
    PMIX_INFO_LOAD(&info[0], PMIX_HOSTNAME, "n0", PMIX_STRING);
    CHECK(rshm_server_open(info, 1, &s));
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_LOAD(&info[0], PMIX_NODE_MAP, "n0", PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_JOB_SIZE, &size, PMIX_UINT32);
    CHECK(rshm_server_register_nspace(s, "pc.job", 2, info, 2));

    pmix_proc_t me, job;
    PMIX_LOAD_PROCID(&me, "pc.job", 0);
    PMIX_LOAD_PROCID(&job, "pc.job", PMIX_RANK_WILDCARD);
    CHECK(rshm_client_attach(rshm_server_path(s), &me));
    pmix_value_t *v = NULL;
    CHECK(rshm_client_get(&job, PMIX_JOB_SIZE, NULL, 0, &v));
    if (PMIX_UINT32 != v->type || 2 != v->data.uint32) {
        fprintf(stderr, "PMIX_JOB_SIZE: type %u value %u\n", v->type, v->data.uint32);
        return 1;
    }
    rshm_client_value_release(v);
    CHECK(rshm_client_detach());
    CHECK(rshm_server_close(s));
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    puts("pkg-config smoke: ok");
    return 0;
}
