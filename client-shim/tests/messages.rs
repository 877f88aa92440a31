//! What a failed Get says (docs/ffi.md): before attach, that no store is attached; in pointer
//! mode, of a key whose answer is built (a set's members), which directive the store cannot
//! honour; of a set too large to answer, that it is too large, with no array built. One test
//! per process: the attached client is process-wide.

use std::ffi::{c_char, CStr, CString};

use rshm_abi::types::status::*;
use rshm_abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t, NSPACE_BUF};
use rshm_gds::psets::index::{self, Run, SetSpec};
use rshm_gds::psets::{self, Registry};
use rshm_gds::{Info, StoreOptions, Value, Writer};

// Links the library whose C exports are declared below.
use rshm_client as _;

extern "C" {
    fn rshm_client_attach(path: *const c_char, self_proc: *const pmix_proc_t) -> pmix_status_t;
    fn rshm_client_get(
        proc_: *const pmix_proc_t,
        key: *const c_char,
        info: *const pmix_info_t,
        ninfo: usize,
        val: *mut *mut pmix_value_t,
    ) -> pmix_status_t;
    fn rshm_client_last_error(buf: *mut c_char, len: usize) -> usize;
}

const WILDCARD: u32 = u32::MAX - 1;

fn proc_of(ns: &str, rank: u32) -> pmix_proc_t {
    let mut nspace = [0 as c_char; NSPACE_BUF];
    for (d, s) in nspace.iter_mut().zip(ns.bytes()) {
        *d = s as c_char;
    }
    pmix_proc_t { nspace, rank }
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

/// A Get's status and, when it failed, its message.
fn get(ns: &str, rank: u32, key: &str, infos: &[Info]) -> (pmix_status_t, String) {
    let p = proc_of(ns, rank);
    let key = CString::new(key).unwrap();
    let arr = if infos.is_empty() {
        std::ptr::null_mut()
    } else {
        rshm_abi::c::alloc_infos(infos).unwrap()
    };
    let mut val: *mut pmix_value_t = std::ptr::null_mut();
    // SAFETY: a valid proc, a NUL-terminated key, `infos.len()` infos, a location for the value.
    let st = unsafe { rshm_client_get(&p, key.as_ptr(), arr, infos.len(), &mut val) };
    (
        st,
        if st == PMIX_SUCCESS {
            String::new()
        } else {
            last_error()
        },
    )
}

#[test]
fn failed_gets_say_why() {
    // Before attach: not attached (not "segment not ready").
    let (st, why) = get("job", 0, "pmix.job.size", &[]);
    assert_eq!(st, PMIX_ERR_INIT);
    assert!(why.contains("not attached"), "{why}");
    assert!(!why.contains("segment"), "{why}");

    let mut w = Writer::create(StoreOptions {
        base_dir: Some(std::env::temp_dir()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut reg = Registry::new();
    reg.define("ocean", &[("job", 0), ("job", 1)]).unwrap();
    let ocean = reg.encode().unwrap();
    // A set no define makes: 100M members (only a forged or foreign store holds one).
    let runs = [Run {
        ns: 0,
        first: 0,
        count: 100_000_000,
    }];
    let huge = index::encode(
        &["job"],
        &[SetSpec {
            name: "huge",
            runs: &runs,
        }],
    )
    .unwrap();
    let mut tx = w.begin();
    psets::stage_indexes(&mut tx, &[(0, ocean), (1, huge)]).unwrap();
    tx.commit().unwrap();
    let path = CString::new(w.path().to_str().unwrap()).unwrap();
    let me = proc_of("job", 0);
    // SAFETY: a NUL-terminated path and a valid proc.
    let attached = unsafe { rshm_client_attach(path.as_ptr(), &me) };
    assert_eq!(attached, PMIX_SUCCESS);

    // Copy mode answers; pointer mode names the directive.
    assert_eq!(
        get("ocean", WILDCARD, psets::PSET_MEMBERS, &[]).0,
        PMIX_SUCCESS
    );
    let pointer = Info::new(
        rshm_abi::types::keys::PMIX_GET_POINTER_VALUES,
        Value::Bool(true),
    );
    let (st, why) = get("ocean", WILDCARD, psets::PSET_MEMBERS, &[pointer]);
    assert_eq!(st, PMIX_ERR_NOT_SUPPORTED);
    assert!(why.contains("PMIX_GET_POINTER_VALUES"), "{why}");

    // Too many members to answer: an error saying so.
    let (st, why) = get("huge", WILDCARD, psets::PSET_MEMBERS, &[]);
    assert_eq!(st, PMIX_ERR_OUT_OF_RESOURCE, "{why}");
    assert!(why.contains("more than an answer holds"), "{why}");
    drop(w);
}
