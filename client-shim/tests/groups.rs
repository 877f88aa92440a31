//! Process groups through the C entry point (docs/psets-groups.md "Groups"): a Get addressed to
//! `{group, rank}` reads the member's native `{nspace, rank}` (12.2), `{group, WILDCARD}` the
//! group's context id and info, `PMIX_GROUP_ENDPT_DATA` of `{group, rank}` that member's
//! endpoint, `PMIX_GROUP_NAMES` of a process every group it is in. One test per process: the
//! attached client is process-wide.

use std::ffi::{c_char, CStr, CString};

use rshm_abi::types::status::*;
use rshm_abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t, NSPACE_BUF};
use rshm_gds::psets::groups::{self, Group, Groups};
use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

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
}

const WILDCARD: u32 = u32::MAX - 1;

fn proc_of(ns: &str, rank: u32) -> pmix_proc_t {
    let mut nspace = [0 as c_char; NSPACE_BUF];
    for (d, s) in nspace.iter_mut().zip(ns.bytes()) {
        *d = s as c_char;
    }
    pmix_proc_t { nspace, rank }
}

/// The answer as a line: a string, a size, a byte object, a string array's items.
fn get(ns: &str, rank: u32, key: &str) -> Result<String, pmix_status_t> {
    let p = proc_of(ns, rank);
    let key = CString::new(key).unwrap();
    let mut val: *mut pmix_value_t = std::ptr::null_mut();
    // SAFETY: a valid proc, a NUL-terminated key, no info, and a location for the value.
    let st = unsafe { rshm_client_get(&p, key.as_ptr(), std::ptr::null(), 0, &mut val) };
    if st != PMIX_SUCCESS {
        return Err(st);
    }
    // SAFETY: the value the call allocated, each union member read as its type says.
    let s = unsafe {
        let v = &*val;
        match v.type_ {
            3 => CStr::from_ptr(v.data.string).to_str().unwrap().to_owned(),
            4 => format!("{}", v.data.size),
            27 => {
                let bo = v.data.bo;
                String::from_utf8(
                    std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size).to_vec(),
                )
                .unwrap()
            }
            39 => {
                let a = &*v.data.darray;
                (0..a.size)
                    .map(|i| {
                        CStr::from_ptr(*a.array.cast::<*mut c_char>().add(i))
                            .to_str()
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            }
            t => format!("type {t}"),
        }
    };
    // SAFETY: released once.
    unsafe { rshm_client_value_release(val) };
    Ok(s)
}

fn publish(w: &mut Writer, name: &str, c: groups::Change) {
    let mut tx = w.begin();
    tx.put_table(groups::NAMESPACE, part::GROUPS, &c.index)
        .unwrap();
    tx.put_table(name, part::GROUPS, c.group.as_ref().unwrap())
        .unwrap();
    tx.commit().unwrap();
}

#[test]
fn gets_addressed_to_a_group() {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(std::env::temp_dir()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    // Two jobs whose ranks say who they are.
    for ns in ["job", "other"] {
        let mut t = TableBuilder::new();
        for r in 0..4 {
            t.insert(
                Realm::Proc(r),
                "pmix.hname",
                &Value::String(format!("{ns}-host-{r}")),
            )
            .unwrap();
        }
        let mut tx = w.begin();
        tx.put_table(ns, part::DATA, &t).unwrap();
        tx.commit().unwrap();
    }
    let path = CString::new(w.path().to_str().unwrap()).unwrap();
    let me = proc_of("job", 0);
    // SAFETY: a NUL-terminated path and a valid proc.
    let st = unsafe { rshm_client_attach(path.as_ptr(), &me) };
    assert_eq!(st, PMIX_SUCCESS);
    // No group yet: a group id is nobody's namespace (the host's to answer).
    assert_eq!(get("grpA", 0, "pmix.hname"), Err(PMIX_ERR_NOT_FOUND));
    assert_eq!(get("job", 1, groups::GROUP_NAMES), Err(PMIX_ERR_NOT_FOUND));

    let mut g = Groups::new();
    let members = [("job", 3), ("other", 2), ("job", 1)];
    let c = g
        .construct(
            "grpA",
            Group {
                members: members.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect(),
                context_id: Some(42),
                info: vec![rshm_gds::Info::new(
                    "app.grp.tag",
                    Value::String("blue".into()),
                )],
                endpoints: vec![Some(b"ep0".to_vec()), None, Some(b"ep2".to_vec())],
            },
        )
        .unwrap();
    publish(&mut w, "grpA", c);
    let c = g
        .construct(
            "grpB",
            Group {
                members: vec![("job".into(), 1)],
                ..Group::default()
            },
        )
        .unwrap();
    publish(&mut w, "grpB", c);

    // 12.2: {group, group rank} is the member's own {nspace, rank}.
    assert_eq!(get("grpA", 0, "pmix.hname"), Ok("job-host-3".into()));
    assert_eq!(get("grpA", 1, "pmix.hname"), Ok("other-host-2".into()));
    assert_eq!(get("grpA", 2, "pmix.hname"), Ok("job-host-1".into()));
    assert_eq!(get("grpA", 3, "pmix.hname"), Err(PMIX_ERR_NOT_FOUND));
    // 12.2.1: the group's own values, and each member's endpoint data.
    assert_eq!(
        get("grpA", WILDCARD, groups::GROUP_CONTEXT_ID),
        Ok("42".into())
    );
    assert_eq!(get("grpA", WILDCARD, "app.grp.tag"), Ok("blue".into()));
    assert_eq!(get("grpA", 2, groups::GROUP_ENDPT_DATA), Ok("ep2".into()));
    assert_eq!(
        get("grpA", 1, groups::GROUP_ENDPT_DATA),
        Err(PMIX_ERR_NOT_FOUND)
    );
    // v5.0 14.2.5: PMIX_GROUP_NAMES, a process in several groups.
    assert_eq!(get("job", 1, groups::GROUP_NAMES), Ok("grpA,grpB".into()));
    assert_eq!(get("other", 2, groups::GROUP_NAMES), Ok("grpA".into()));
    assert_eq!(get("job", 0, groups::GROUP_NAMES), Err(PMIX_ERR_NOT_FOUND));
    // A real namespace is never read as a group.
    assert_eq!(get("job", 2, "pmix.hname"), Ok("job-host-2".into()));
}
