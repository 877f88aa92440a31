//! Process sets through the C entry points (docs/psets-groups.md): `rshm_client_get` of
//! `PMIX_PSET_NAMES` (v5.0 14.1.2) and `PMIX_PSET_MEMBERS`, and `rshm_client_query` of the three
//! query keys (12.1), as C values; before any set is published, every call is the host's.
//! One test per process: the attached client is process-wide.

use std::ffi::{c_char, CStr, CString};

use rshm_abi::types::status::*;
use rshm_abi::types::RANK_WILDCARD as WILDCARD;
use rshm_abi::types::{
    pmix_info_t, pmix_proc_t, pmix_query_t, pmix_status_t, pmix_value_t, NSPACE_BUF,
};
use rshm_gds::psets::{self, Registry};
use rshm_gds::value::types::{DATA_ARRAY, PROC, SIZE, STRING};
use rshm_gds::{StoreOptions, Writer};

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
    fn rshm_client_value_release(val: *mut pmix_value_t);
    fn rshm_client_query(
        queries: *const pmix_query_t,
        nqueries: usize,
        results: *mut *mut pmix_info_t,
        nresults: *mut usize,
    ) -> pmix_status_t;
}

fn proc_of(ns: &str, rank: u32) -> pmix_proc_t {
    let mut nspace = [0 as c_char; NSPACE_BUF];
    for (d, s) in nspace.iter_mut().zip(ns.bytes()) {
        *d = s as c_char;
    }
    pmix_proc_t { nspace, rank }
}

/// A value as a line: `type:content`.
fn show(v: &pmix_value_t) -> String {
    // SAFETY: values written by the library, each union member read as its type says.
    unsafe {
        match v.type_ {
            STRING => format!("s:{}", CStr::from_ptr(v.data.string).to_str().unwrap()),
            SIZE => format!("z:{}", v.data.size),
            DATA_ARRAY => {
                let a = &*v.data.darray;
                let items: Vec<String> = match a.type_ {
                    STRING => (0..a.size)
                        .map(|i| {
                            let p = *a.array.cast::<*mut c_char>().add(i);
                            CStr::from_ptr(p).to_str().unwrap().to_owned()
                        })
                        .collect(),
                    PROC => (0..a.size)
                        .map(|i| {
                            let p = &*a.array.cast::<pmix_proc_t>().add(i);
                            let ns = CStr::from_ptr(p.nspace.as_ptr()).to_str().unwrap();
                            format!("{ns}.{}", p.rank)
                        })
                        .collect(),
                    t => vec![format!("type {t}")],
                };
                format!("a{}:{}", a.type_, items.join(","))
            }
            t => format!("type {t}"),
        }
    }
}

fn get(ns: &str, rank: u32, key: &str) -> Result<String, pmix_status_t> {
    let p = proc_of(ns, rank);
    let key = CString::new(key).unwrap();
    let mut val: *mut pmix_value_t = std::ptr::null_mut();
    // SAFETY: a valid proc, a NUL-terminated key, no info, and a location for the value.
    let st = unsafe { rshm_client_get(&p, key.as_ptr(), std::ptr::null(), 0, &mut val) };
    if st != PMIX_SUCCESS {
        return Err(st);
    }
    // SAFETY: the value the call allocated, read then released once.
    let s = show(unsafe { &*val });
    // SAFETY: as above.
    unsafe { rshm_client_value_release(val) };
    Ok(s)
}

/// One query of `keys`, with a `PMIX_PSET_NAME` qualifier when `pset` is given.
fn query(keys: &[&str], pset: Option<&str>) -> (pmix_status_t, Vec<String>) {
    let owned: Vec<CString> = keys.iter().map(|k| CString::new(*k).unwrap()).collect();
    let mut ptrs: Vec<*mut c_char> = owned.iter().map(|k| k.as_ptr().cast_mut()).collect();
    ptrs.push(std::ptr::null_mut());
    let mut quals: Vec<pmix_info_t> = pset
        .map(|n| {
            rshm_abi::c::c_info(&rshm_gds::Info::new(
                psets::PSET_NAME,
                rshm_gds::Value::String(n.into()),
            ))
            .unwrap()
        })
        .into_iter()
        .collect();
    let q = pmix_query_t {
        keys: ptrs.as_mut_ptr(),
        qualifiers: if quals.is_empty() {
            std::ptr::null_mut()
        } else {
            quals.as_mut_ptr()
        },
        nqual: quals.len(),
    };
    let mut res: *mut pmix_info_t = std::ptr::null_mut();
    let mut n = 0usize;
    // SAFETY: one valid query; locations for the results.
    let st = unsafe { rshm_client_query(&q, 1, &mut res, &mut n) };
    let mut out = Vec::new();
    for i in 0..n {
        // SAFETY: `n` infos the call allocated.
        let info = unsafe { &mut *res.add(i) };
        // SAFETY: the key the library wrote, NUL-terminated.
        let key = unsafe { CStr::from_ptr(info.key.as_ptr()) }
            .to_str()
            .unwrap();
        out.push(format!("{key}={}", show(&info.value)));
        // SAFETY: each value destructed once, then the array freed (PMIX_INFO_FREE's steps).
        unsafe { rshm_abi::c::destruct_value(&mut info.value) };
    }
    if !res.is_null() {
        // SAFETY: the calloc'd array, freed once.
        unsafe { libc::free(res.cast()) };
    }
    for q in &mut quals {
        // SAFETY: the qualifier written by c_info above.
        unsafe { rshm_abi::c::destruct_value(&mut q.value) };
    }
    (st, out)
}

fn publish(w: &mut Writer, reg: &mut Registry) {
    let mut tx = w.begin();
    reg.stage(&mut tx).unwrap();
    tx.commit().unwrap();
    reg.published();
}

#[test]
fn pset_gets_and_queries_through_the_c_abi() {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(std::env::temp_dir()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let path = CString::new(w.path().to_str().unwrap()).unwrap();
    let me = proc_of("job", 0);
    // SAFETY: a NUL-terminated path and a valid proc.
    let st = unsafe { rshm_client_attach(path.as_ptr(), &me) };
    assert_eq!(st, PMIX_SUCCESS);

    // No set table yet: the host's (a pass is NOT_SUPPORTED / NOT_FOUND without one).
    assert_eq!(
        query(&[psets::QUERY_NUM_PSETS], None).0,
        PMIX_ERR_NOT_SUPPORTED
    );
    assert_eq!(get("job", 0, psets::PSET_NAMES), Err(PMIX_ERR_NOT_FOUND));

    let mut reg = Registry::new();
    reg.define("ocean", &[("job", 0), ("job", 1)]).unwrap();
    reg.define("ice", &[("job", 1), ("job", 2)]).unwrap();
    publish(&mut w, &mut reg);

    // 12.1 / v5.0 14.1.2: a process's sets, a set's members.
    assert_eq!(get("job", 1, psets::PSET_NAMES), Ok("a3:ocean,ice".into()));
    assert_eq!(get("job", 3, psets::PSET_NAMES), Err(PMIX_ERR_NOT_FOUND));
    assert_eq!(
        get("ice", WILDCARD, psets::PSET_MEMBERS),
        Ok("a22:job.1,job.2".into())
    );

    // 12.1: the queries, as OpenPMIx 4.2.2's hosts answer them.
    assert_eq!(
        query(&[psets::QUERY_NUM_PSETS, psets::QUERY_PSET_NAMES], None),
        (
            PMIX_SUCCESS,
            vec![
                "pmix.qry.psetnum=z:2".into(),
                "pmix.qry.psets=s:ocean,ice".into()
            ]
        )
    );
    assert_eq!(
        query(&[psets::QUERY_PSET_MEMBERSHIP], Some("ocean")),
        (PMIX_SUCCESS, vec!["pmix.qry.pmems=a22:job.0,job.1".into()])
    );
    // An unknown set ends the whole call, as PRRTE ends it.
    assert_eq!(
        query(
            &[psets::QUERY_NUM_PSETS, psets::QUERY_PSET_MEMBERSHIP],
            Some("gone")
        ),
        (PMIX_ERR_NOT_FOUND, vec![])
    );
    assert_eq!(
        query(&[psets::QUERY_PSET_MEMBERSHIP], None).0,
        PMIX_ERR_BAD_PARAM
    );
    // Another key in the call: all of it is the host's.
    assert_eq!(
        query(&[psets::QUERY_NUM_PSETS, "pmix.qry.ns"], None).0,
        PMIX_ERR_NOT_SUPPORTED
    );

    // 17.2.20: deleted, gone from the next answer.
    assert!(reg.delete("ocean"));
    publish(&mut w, &mut reg);
    assert_eq!(get("job", 1, psets::PSET_NAMES), Ok("a3:ice".into()));
    assert_eq!(get("job", 0, psets::PSET_NAMES), Err(PMIX_ERR_NOT_FOUND));
    assert_eq!(
        query(&[psets::QUERY_NUM_PSETS, psets::QUERY_PSET_NAMES], None),
        (
            PMIX_SUCCESS,
            vec!["pmix.qry.psetnum=z:1".into(), "pmix.qry.psets=s:ice".into()]
        )
    );
}
