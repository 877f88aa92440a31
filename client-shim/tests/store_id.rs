//! Through the C entry point: a client attaches only to the store its server made for it
//! (`RSHM_STORE_ID`, set at setup_fork beside `RSHM_STORE`): another store of the same owner
//! renamed to that path is refused with `PMIX_ERR_NO_PERMISSIONS` and a message naming the
//! rule. One test per process: it sets the process's environment.

use std::ffi::{c_char, CStr, CString};

use rshm_abi::types::status::*;
use rshm_abi::types::{pmix_proc_t, pmix_status_t, NSPACE_BUF};
use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

// The library's C exports (the header's declarations), linked from the rlib, which this names.
use rshm_client as _;

extern "C" {
    fn rshm_client_attach(path: *const c_char, self_proc: *const pmix_proc_t) -> pmix_status_t;
    fn rshm_client_detach() -> pmix_status_t;
    fn rshm_client_last_error(buf: *mut c_char, len: usize) -> usize;
}

fn attach(path: &CStr) -> pmix_status_t {
    let mut nspace = [0 as c_char; NSPACE_BUF];
    nspace[0] = b'n' as c_char;
    let me = pmix_proc_t { nspace, rank: 0 };
    // SAFETY: a NUL-terminated path and a valid proc.
    unsafe { rshm_client_attach(path.as_ptr(), &me) }
}

fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: `buf` is writable for its length.
    unsafe { rshm_client_last_error(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: the call NUL-terminated what it copied.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn store(base: &std::path::Path, k: u32) -> Writer {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base.to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut t = TableBuilder::new();
    t.insert(Realm::Proc(0), "k", &Value::Uint32(k)).unwrap();
    let mut tx = w.begin();
    tx.put_table("n", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    w
}

#[test]
fn another_store_renamed_to_the_servers_path_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let a = store(base.path(), 1);
    let b = store(base.path(), 2);
    let path = CString::new(a.path().as_os_str().as_encoded_bytes()).unwrap();
    std::env::set_var(rshm_abi::env::STORE_OWNER, a.owner_uid().to_string());
    std::env::set_var(rshm_abi::env::STORE_ID, a.store_id());

    // Its own store: attached.
    assert_eq!(attach(&path), PMIX_SUCCESS, "{}", last_error());
    // SAFETY: no other call is running, and no pointer-mode value was taken.
    assert_eq!(unsafe { rshm_client_detach() }, PMIX_SUCCESS);

    // B's store (same owner) renamed over A's path: refused, nothing attached.
    std::fs::rename(a.path(), base.path().join("rshm-away")).unwrap();
    std::fs::rename(b.path(), a.path()).unwrap();
    assert_eq!(attach(&path), PMIX_ERR_NO_PERMISSIONS, "{}", last_error());
    let why = last_error();
    assert!(
        why.contains("untrusted") && why.contains("RSHM_STORE_ID"),
        "{why}"
    );
    // SAFETY: as above.
    let detached = unsafe { rshm_client_detach() };
    assert_eq!(detached, PMIX_ERR_INIT, "attached anyway");
}
