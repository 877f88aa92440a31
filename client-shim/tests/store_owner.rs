//! Through the C entry point: a client refuses a store not owned by the uid its server named
//! (`RSHM_STORE_OWNER`, set at setup_fork), with `PMIX_ERR_NO_PERMISSIONS` and a message saying
//! why, and attaches to the same store when the owner is the one named. One test per process:
//! it sets the process's environment, and the attached client is process-wide.

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

#[test]
fn a_store_not_owned_by_the_named_uid_is_refused_with_no_permissions() {
    let base = tempfile::tempdir().unwrap();
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut t = TableBuilder::new();
    t.insert(Realm::Proc(0), "k", &Value::Uint32(7)).unwrap();
    let mut tx = w.begin();
    tx.put_table("n", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let path = CString::new(w.path().as_os_str().as_encoded_bytes()).unwrap();
    let owner = w.owner_uid();

    // Named another owner than the store's: refused, and nothing attached.
    std::env::set_var(rshm_abi::env::STORE_OWNER, (owner ^ 1).to_string());
    assert_eq!(attach(&path), PMIX_ERR_NO_PERMISSIONS, "{}", last_error());
    let why = last_error();
    assert!(why.contains("untrusted"), "{why}");
    // SAFETY: no other call is running, and no pointer-mode value was taken.
    let detached = unsafe { rshm_client_detach() };
    assert_eq!(detached, PMIX_ERR_INIT, "attached anyway");

    // Named the store's owner: attached.
    std::env::set_var(rshm_abi::env::STORE_OWNER, owner.to_string());
    assert_eq!(attach(&path), PMIX_SUCCESS, "{}", last_error());
    // SAFETY: as above.
    assert_eq!(unsafe { rshm_client_detach() }, PMIX_SUCCESS);
    drop(w);
}
