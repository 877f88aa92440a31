//! Through the C entry point: a Get after the server removed its store is
//! `PMIX_ERR_UNREACH`, not a generic error, while the same client attached to a live store
//! answers. One test per process: the attached client is process-wide.

use std::ffi::{c_char, CString};

use rshm_abi::types::status::*;
use rshm_abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t, NSPACE_BUF};
use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

// The library's C export, linked from the rlib (the header's declaration).
extern "C" {
    fn rshm_client_get(
        proc_: *const pmix_proc_t,
        key: *const c_char,
        info: *const pmix_info_t,
        ninfo: usize,
        val: *mut *mut pmix_value_t,
    ) -> pmix_status_t;
    fn rshm_client_value_release(val: *mut pmix_value_t);
}

fn store() -> Writer {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(std::env::temp_dir()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut t = TableBuilder::new();
    for ns in ["live", "gone"] {
        t.insert(Realm::Proc(0), "k", &Value::Uint32(7)).unwrap();
        let mut tx = w.begin();
        tx.put_table(ns, part::DATA, &t).unwrap();
        tx.commit().unwrap();
    }
    w
}

fn proc_of(ns: &str) -> pmix_proc_t {
    let mut nspace = [0 as c_char; NSPACE_BUF];
    for (d, s) in nspace.iter_mut().zip(ns.bytes()) {
        *d = s as c_char;
    }
    pmix_proc_t { nspace, rank: 0 }
}

fn get(ns: &str) -> pmix_status_t {
    let p = proc_of(ns);
    let key = CString::new("k").unwrap();
    let mut val: *mut pmix_value_t = std::ptr::null_mut();
    // SAFETY: a valid proc, a NUL-terminated key, no info, and a location for the value.
    let status = unsafe { rshm_client_get(&p, key.as_ptr(), std::ptr::null(), 0, &mut val) };
    if !val.is_null() {
        // SAFETY: the value the call allocated, released once.
        unsafe { rshm_client_value_release(val) };
    }
    status
}

#[test]
fn a_get_after_the_server_removed_the_store_is_unreachable() {
    let w = store();
    rshm_client::attach(Some(w.path()), Some(("live".into(), 0))).unwrap();
    // Mapped while the store lives: keeps answering from the mapping afterwards.
    assert_eq!(get("live"), PMIX_SUCCESS);
    w.close().unwrap();
    assert_eq!(get("live"), PMIX_SUCCESS);
    // Never mapped: its file went with the store.
    assert_eq!(get("gone"), PMIX_ERR_UNREACH);
    // A namespace the store never held stays not found.
    assert_eq!(get("never"), PMIX_ERR_NOT_FOUND);
}
