/* host-rshm.c - the rshm server-shim, loaded with --rshm LIB: the host registers the same
 * array with rshm beside OpenPMIx and adds what a client needs to attach to its environment.
 * Loaded with dlopen so this tool builds without Rust. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>

#include "common.h"
#include "host.h"

struct rshm_api rshm;

static void *rshm_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        die("--rshm: %s: %s", name, dlerror());
    }
    return p;
}

void rshm_check(pmix_status_t rc, const char *what)
{
    if (PMIX_SUCCESS != rc) {
        char msg[512] = "";
        rshm.last_error(msg, sizeof(msg));
        die("rshm %s: %s (%s)", what, PMIx_Error_string(rc), msg);
    }
}

void rshm_load(const char *path, const char *tmpdir, const char *hostname)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        die("--rshm %s: %s", path, dlerror());
    }
    /* POSIX: a data pointer from dlsym converts to a function pointer through memcpy. */
    void *p;
    p = rshm_sym(lib, "rshm_server_open");           memcpy(&rshm.open, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_close");          memcpy(&rshm.close, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_register_nspace"); memcpy(&rshm.reg, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_deregister_nspace"); memcpy(&rshm.dereg, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_setup_fork");     memcpy(&rshm.fork, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_last_error");     memcpy(&rshm.last_error, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_define_pset");    memcpy(&rshm.define_pset, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_delete_pset");    memcpy(&rshm.delete_pset, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_define_psets");   memcpy(&rshm.define_psets, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_group_construct"); memcpy(&rshm.group_construct, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_group_destruct"); memcpy(&rshm.group_destruct, &p, sizeof(p));
    /* PMIX_HOST_RSHM_TOPOLOGY set: the store publishes the topology and completes locality. */
    pmix_info_t info[3];
    bool topology = NULL != getenv("PMIX_HOST_RSHM_TOPOLOGY");
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_HOSTNAME, hostname, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], "rshm.topology", &topology, PMIX_BOOL);
    rshm_check(rshm.open(info, 3, &rshm.h), "open");
    for (int i = 0; i < 3; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
}
