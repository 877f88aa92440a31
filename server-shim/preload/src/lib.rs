//! `librshm_server_preload.so`: `LD_PRELOAD` it into an unmodified PMIx server host (PRRTE's
//! `prterun` / `prted`, Open MPI's `mpirun`, a resource manager's daemon) and the host's calls
//! of the standard's server API are published into an rshm store beside libpmix, in the host's
//! own process, through server-shim's [`Server`]:
//!
//! | the host calls | the preload, around the real call (`dlsym(RTLD_NEXT)`) |
//! |---|---|
//! | `PMIx_server_init` | after it succeeds: opens the store (`PMIX_USERID` / `PMIX_GRPID` its readers, `PMIX_SERVER_TMPDIR` and `PMIX_HOSTNAME` as `rshm_server_open` reads them) |
//! | `PMIx_server_register_nspace` | before it: publishes the namespace's job data (so it is there before the host's callback starts clients); withdrawn again if the real call fails at once |
//! | `PMIx_server_register_resources` | before it: publishes the node resources |
//! | `PMIx_server_setup_fork` | after it succeeds, for a published namespace: adds `RSHM_STORE`, `RSHM_STORE_OWNER`, `RSHM_STORE_ID`, `RSHM_NSPACE`, `RSHM_RANK` to the client's environment |
//! | `PMIx_server_deregister_nspace` | before it: removes the namespace |
//! | `PMIx_server_define_process_set` | before it (its `PMIX_PROCESS_SET_DEFINE` event may make clients ask): publishes the set; deleted again if the real call fails |
//! | `PMIx_server_delete_process_set` | before it: deletes the set |
//! | `PMIx_server_finalize` | after it: removes the store (also at exit, in the process that opened it) |
//!
//! The real call always runs and its status is the caller's: a registration rshm cannot
//! take (a form it does not read, a full filesystem) is only left out of the store, and the
//! clients' preloaded `PMIx_Get` (`librshm_client_preload.so`) then asks libpmix, as it does for
//! everything else libpmix alone holds (posted and fenced data). A set the store cannot take
//! withdraws every set from the store for good: clients then ask libpmix (its host) for all of
//! them, never an incomplete list. Nothing here links libpmix: the real functions are the next
//! definitions in the process.
//!
//! `exports` holds the interposed functions and the crate's only `unsafe` (the FFI itself).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod exports;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use rshm_gds::jobdata::RegInfo;
use rshm_gds::Info;
use rshm_server::{Server, ServerOptions};

/// The host's store, from `PMIx_server_init` to `PMIx_server_finalize`.
struct Store {
    server: Server,
    /// The process that opened it: only that one removes it at exit (not a child the host
    /// forked that exits before its exec).
    pid: u32,
    /// Namespaces whose job data the store holds: only their clients are told about it.
    published: HashSet<String>,
    /// A set the store could not take: sets are left to libpmix from then on.
    psets_off: bool,
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);

/// The pid of the process that opened the store (0: none), readable without the lock: the exit
/// hook checks it first, so that a child the host forked never touches a lock another thread
/// of its parent may have held at the fork (it would wait forever for a thread it does not have).
static OWNER: AtomicU32 = AtomicU32::new(0);

/// A panic inside one call (caught at the export's boundary) fails that call only: the state
/// it leaves is the server's own, consistent at every publication.
fn store() -> MutexGuard<'static, Option<Store>> {
    STORE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `RSHM_MCA_server_preload_verbose` > 0 (or the deprecated `RSHM_PRELOAD_VERBOSE` set): say on
/// stderr what the store did and why a call was left out.
fn log(msg: impl FnOnce() -> String) {
    if rshm_abi::verbose::level("RSHM_MCA_server_preload_verbose", "RSHM_PRELOAD_VERBOSE") > 0 {
        eprintln!("rshm-server-preload[{}]: {}", std::process::id(), msg());
    }
}

/// The keys of `PMIx_server_init`'s info array the store reads (`ServerOptions::from_infos`);
/// the rest are the host's, and are not even converted.
pub(crate) fn wanted_init_key(key: &str) -> bool {
    use rshm_abi::types::keys::{PMIX_GRPID, PMIX_HOSTNAME, PMIX_USERID};
    matches!(
        key,
        rshm_abi::env::INFO_DIR | "pmix.srvr.tmpdir" | PMIX_USERID | PMIX_GRPID | PMIX_HOSTNAME
    )
}

/// `PMIx_server_init` succeeded: open the store (once; a second init keeps the first store).
pub(crate) fn open(infos: &[Info]) {
    let mut st = store();
    if st.is_some() {
        return;
    }
    let opened = ServerOptions::from_infos(infos).and_then(Server::open);
    match opened {
        Ok(server) => {
            log(|| server.describe());
            *st = Some(Store {
                server,
                pid: std::process::id(),
                published: HashSet::new(),
                psets_off: false,
            });
            OWNER.store(std::process::id(), Ordering::Release);
            exports::register_exit_hook();
        }
        Err(e) => log(|| format!("no store: {e}")),
    }
}

/// Before `PMIx_server_register_nspace`: publish the namespace's job data. Returns whether it
/// was published.
pub(crate) fn register_nspace<I: RegInfo>(ns: &str, nlocalprocs: i32, infos: &[I]) -> bool {
    let mut st = store();
    let Some(s) = st.as_mut() else { return false };
    match s.server.register_nspace(ns, nlocalprocs, infos) {
        Ok(()) => {
            log(|| format!("registered {ns}"));
            s.published.insert(ns.to_owned());
            true
        }
        Err(e) => {
            log(|| format!("{ns} left to libpmix: {e}"));
            // An earlier registration of the namespace is no longer the job's.
            withdraw(s, ns);
            false
        }
    }
}

/// The namespace leaves the store (deregistered, or its registration failed).
pub(crate) fn deregister_nspace(ns: &str) {
    if let Some(s) = store().as_mut() {
        withdraw(s, ns);
    }
}

fn withdraw(s: &mut Store, ns: &str) {
    if s.published.remove(ns) {
        if let Err(e) = s.server.deregister_nspace(ns) {
            log(|| format!("removing {ns}: {e}"));
        }
    }
}

/// Before `PMIx_server_register_resources`.
pub(crate) fn register_resources(infos: &[Info]) {
    if let Some(s) = store().as_mut() {
        if let Err(e) = s.server.register_resources(infos) {
            log(|| format!("resources left to libpmix: {e}"));
        }
    }
}

/// Before `PMIx_server_define_process_set` (`define` true) or `_delete_process_set`.
pub(crate) fn pset(name: &str, members: Option<&[(&str, u32)]>) {
    let mut st = store();
    let Some(s) = st.as_mut() else { return };
    if s.psets_off {
        return;
    }
    let res = match members {
        Some(m) => s.server.define_pset(name, m),
        None => match s.server.delete_pset(name) {
            // Nothing to delete: the store already agrees.
            Err(rshm_gds::Error::NotFound) => Ok(()),
            other => other,
        },
    };
    if let Err(e) = res {
        log(|| format!("set {name} not taken ({e}): every set left to libpmix"));
        s.psets_off = true;
        if let Err(e) = s.server.withdraw_psets() {
            log(|| format!("withdrawing the sets: {e}"));
        }
    }
}

/// After `PMIx_server_setup_fork`: what the client of (`ns`, `rank`) needs to attach, if its
/// namespace is in the store.
pub(crate) fn client_env(ns: &str, rank: u32) -> Vec<(&'static str, String)> {
    match store().as_ref() {
        Some(s) if s.published.contains(ns) => s.server.client_env(ns, rank),
        _ => Vec::new(),
    }
}

/// After `PMIx_server_finalize`: remove the store, in the process that opened it.
pub(crate) fn close() {
    close_locked(store());
}

/// At exit: as [`close`], but never waiting. In a child the host forked: nothing, without
/// touching the lock. With the lock held by another thread (inside a call): the store is left
/// to the next server's sweep rather than exit waiting for a thread that may never return.
pub(crate) fn close_at_exit() {
    if OWNER.load(Ordering::Acquire) != std::process::id() {
        return;
    }
    match STORE.try_lock() {
        Ok(st) => close_locked(st),
        Err(TryLockError::Poisoned(e)) => close_locked(e.into_inner()),
        Err(TryLockError::WouldBlock) => {}
    }
}

fn close_locked(mut st: MutexGuard<'_, Option<Store>>) {
    if st.as_ref().is_some_and(|s| s.pid == std::process::id()) {
        if let Some(s) = st.take() {
            let path = s.server.path().display().to_string();
            match s.server.close() {
                Ok(()) => log(|| format!("removed {path}")),
                Err(e) => log(|| format!("removing {path}: {e}")),
            }
        }
    }
}
