//! The PMIx client calls the library makes (Debian's libpmix, linked), each behind a safe
//! function taking and returning Rust values.

use core::ffi::{c_char, c_int};
use std::ffi::{CStr, CString};

use rshm_abi::types::status::{PMIX_ERR_NOT_FOUND, PMIX_SUCCESS};
use rshm_abi::types::{
    pmix_app_t, pmix_info_t, pmix_pdata_t, pmix_proc_t, pmix_status_t, pmix_value_t, KEY_BUF,
    NSPACE_BUF,
};
pub use rshm_abi::types::{RANK_UNDEF, RANK_WILDCARD};
use rshm_gds::modex::Scope;
use rshm_gds::value::types::{BOOL as PMIX_BOOL, STRING as PMIX_STRING};

use crate::codes::{Pmi2Error, Result, PMI2_ERR_INVALID_ARG};

extern "C" {
    fn PMIx_Init(p: *mut pmix_proc_t, info: *mut pmix_info_t, ninfo: usize) -> pmix_status_t;
    fn PMIx_Finalize(info: *const pmix_info_t, ninfo: usize) -> pmix_status_t;
    fn PMIx_Abort(
        status: c_int,
        msg: *const c_char,
        procs: *mut pmix_proc_t,
        nprocs: usize,
    ) -> pmix_status_t;
    fn PMIx_Put(scope: u8, key: *const c_char, val: *mut pmix_value_t) -> pmix_status_t;
    fn PMIx_Commit() -> pmix_status_t;
    fn PMIx_Fence(
        procs: *const pmix_proc_t,
        nprocs: usize,
        info: *const pmix_info_t,
        ninfo: usize,
    ) -> pmix_status_t;
    fn PMIx_Get(
        p: *const pmix_proc_t,
        key: *const c_char,
        info: *const pmix_info_t,
        ninfo: usize,
        val: *mut *mut pmix_value_t,
    ) -> pmix_status_t;
    fn PMIx_Publish(info: *const pmix_info_t, ninfo: usize) -> pmix_status_t;
    fn PMIx_Lookup(
        data: *mut pmix_pdata_t,
        ndata: usize,
        info: *const pmix_info_t,
        ninfo: usize,
    ) -> pmix_status_t;
    fn PMIx_Unpublish(
        keys: *mut *mut c_char,
        info: *const pmix_info_t,
        ninfo: usize,
    ) -> pmix_status_t;
    fn PMIx_Spawn(
        job_info: *const pmix_info_t,
        ninfo: usize,
        apps: *const pmix_app_t,
        napps: usize,
        nspace: *mut c_char,
    ) -> pmix_status_t;
    fn PMIx_Connect(
        procs: *const pmix_proc_t,
        nprocs: usize,
        info: *const pmix_info_t,
        ninfo: usize,
    ) -> pmix_status_t;
    fn PMIx_Disconnect(
        procs: *const pmix_proc_t,
        nprocs: usize,
        info: *const pmix_info_t,
        ninfo: usize,
    ) -> pmix_status_t;
    fn PMIx_Value_destruct(val: *mut pmix_value_t);
}

/// A value libpmix answered, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum PVal {
    Str(String),
    Int(i64),
    Uint(u64),
    Bool(bool),
    /// Any other type (its PMIx type code): no PMI-2 text for it.
    Other(u16),
}

fn status(call: &str, rc: pmix_status_t) -> Result<()> {
    if rc == PMIX_SUCCESS {
        Ok(())
    } else {
        Err(Pmi2Error::pmix(call, rc))
    }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_ARG, "a NUL inside a string"))
}

fn zeroed_proc() -> pmix_proc_t {
    pmix_proc_t {
        nspace: [0; NSPACE_BUF],
        rank: 0,
    }
}

fn proc_of(ns: &str, rank: u32) -> Result<pmix_proc_t> {
    let mut p = zeroed_proc();
    if ns.len() >= NSPACE_BUF {
        return Err(Pmi2Error::new(PMI2_ERR_INVALID_ARG, "namespace too long"));
    }
    for (d, s) in p.nspace.iter_mut().zip(ns.bytes()) {
        *d = s as c_char;
    }
    p.rank = rank;
    Ok(p)
}

fn key_buf(key: &str) -> Result<[c_char; KEY_BUF]> {
    if key.len() >= KEY_BUF || key.contains('\0') {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_ARG,
            "key does not fit PMIx's",
        ));
    }
    let mut k = [0 as c_char; KEY_BUF];
    for (d, s) in k.iter_mut().zip(key.bytes()) {
        *d = s as c_char;
    }
    Ok(k)
}

fn zeroed_value() -> pmix_value_t {
    // SAFETY: pmix_value_t is plain data (a type code and a union of scalars and pointers): all
    // zeros is PMIX_UNDEF with NULL pointers, what PMIX_VALUE_CONSTRUCT writes.
    unsafe { core::mem::zeroed() }
}

/// A `pmix_info_t` holding a bool (`key` is one of libpmix's attribute names, short).
fn info_bool(key: &str, v: bool) -> Result<pmix_info_t> {
    let mut value = zeroed_value();
    value.type_ = PMIX_BOOL;
    value.data.flag = v;
    Ok(pmix_info_t {
        key: key_buf(key)?,
        flags: 0,
        value,
    })
}

/// A `pmix_info_t` holding a string borrowed from `s` (valid while `s` lives).
fn info_str(key: &str, s: &CStr) -> Result<pmix_info_t> {
    let mut value = zeroed_value();
    value.type_ = PMIX_STRING;
    value.data.string = s.as_ptr().cast_mut();
    Ok(pmix_info_t {
        key: key_buf(key)?,
        flags: 0,
        value,
    })
}

fn text_of(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL string libpmix returned: NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn nspace_text(ns: &[c_char; NSPACE_BUF]) -> String {
    let bytes: Vec<u8> = ns
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The owned copy of a value libpmix wrote.
fn pval(v: &pmix_value_t) -> PVal {
    // SAFETY: each union member read is the one the value's type code says it holds.
    unsafe {
        match v.type_ {
            PMIX_BOOL => PVal::Bool(v.data.flag),
            PMIX_STRING => PVal::Str(text_of(v.data.string)),
            4 => PVal::Uint(v.data.size as u64),
            5 => PVal::Int(v.data.pid.into()),
            6 => PVal::Int(v.data.integer.into()),
            7 => PVal::Int(v.data.int8.into()),
            8 => PVal::Int(v.data.int16.into()),
            9 => PVal::Int(v.data.int32.into()),
            10 => PVal::Int(v.data.int64),
            11 => PVal::Uint(v.data.uint.into()),
            12 | 2 => PVal::Uint(v.data.uint8.into()),
            13 => PVal::Uint(v.data.uint16.into()),
            14 => PVal::Uint(v.data.uint32.into()),
            15 => PVal::Uint(v.data.uint64),
            40 => PVal::Uint(v.data.rank.into()),
            t => PVal::Other(t),
        }
    }
}

/// PMIx_Init: this process's namespace and rank.
pub fn init() -> Result<(String, u32)> {
    let mut me = zeroed_proc();
    // SAFETY: `me` is a writable pmix_proc_t; no info.
    status("PMIx_Init", unsafe {
        PMIx_Init(&mut me, core::ptr::null_mut(), 0)
    })?;
    Ok((nspace_text(&me.nspace), me.rank))
}

pub fn finalize() -> Result<()> {
    // SAFETY: no info.
    status("PMIx_Finalize", unsafe {
        PMIx_Finalize(core::ptr::null(), 0)
    })
}

/// PMIx_Abort of the whole namespace (`procs` None) or of the given processes.
pub fn abort(code: i32, msg: &str, procs: Option<(&str, u32)>) -> Result<()> {
    let msg = cstring(msg)?;
    let mut target = match procs {
        Some((ns, r)) => Some(proc_of(ns, r)?),
        None => None,
    };
    let (p, n) = match target.as_mut() {
        Some(t) => (t as *mut pmix_proc_t, 1),
        None => (core::ptr::null_mut(), 0),
    };
    // SAFETY: a NUL-terminated message, and NULL or one valid proc.
    status("PMIx_Abort", unsafe {
        PMIx_Abort(code, msg.as_ptr(), p, n)
    })
}

/// PMIx_Put of a string in `scope`, then PMIx_Commit.
pub fn put_commit(scope: Scope, key: &str, val: &str) -> Result<()> {
    let k = cstring(key)?;
    let s = cstring(val)?;
    let mut v = zeroed_value();
    v.type_ = PMIX_STRING;
    v.data.string = s.as_ptr().cast_mut();
    // SAFETY: a NUL-terminated key and a string value PMIx_Put copies before returning.
    status("PMIx_Put", unsafe {
        PMIx_Put(scope as u8, k.as_ptr(), &mut v)
    })?;
    // SAFETY: no arguments.
    status("PMIx_Commit", unsafe { PMIx_Commit() })
}

/// PMIx_Commit, then PMIx_Fence over the whole namespace, collecting the posted data.
pub fn commit_fence() -> Result<()> {
    // SAFETY: no arguments.
    status("PMIx_Commit", unsafe { PMIx_Commit() })?;
    let collect = info_bool("pmix.collect", true)?;
    // SAFETY: NULL procs (the caller's namespace) and one valid info.
    status("PMIx_Fence", unsafe {
        PMIx_Fence(core::ptr::null(), 0, &collect, 1)
    })
}

/// How far a PMIx_Get may go for a value it does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Ask the server, and wait for the value (PMIx_Get's default).
    Wait,
    /// Ask the server, without waiting for the value to appear (PMIX_IMMEDIATE).
    Immediate,
    /// Only the client's own cache (PMIX_OPTIONAL).
    Cache,
}

/// PMIx_Get of (`ns`, `rank`)'s `key`: None when PMIx says NOT_FOUND.
pub fn get(ns: &str, rank: u32, key: &str, reach: Reach) -> Result<Option<PVal>> {
    let p = proc_of(ns, rank)?;
    let k = cstring(key)?;
    let directive = match reach {
        Reach::Wait => None,
        Reach::Immediate => Some(info_bool("pmix.immediate", true)?),
        Reach::Cache => Some(info_bool("pmix.optional", true)?),
    };
    let (info, n) = match &directive {
        Some(d) => (d as *const pmix_info_t, 1),
        None => (core::ptr::null(), 0),
    };
    let mut out: *mut pmix_value_t = core::ptr::null_mut();
    // SAFETY: a valid proc, a NUL-terminated key, NULL or one valid info, a writable location.
    let rc = unsafe { PMIx_Get(&p, k.as_ptr(), info, n, &mut out) };
    if rc == PMIX_ERR_NOT_FOUND {
        return Ok(None);
    }
    status("PMIx_Get", rc)?;
    if out.is_null() {
        return Ok(None);
    }
    // SAFETY: libpmix returned a malloc'd value (PMIX_VALUE_RELEASE: destruct, then free).
    let v = unsafe {
        let v = pval(&*out);
        PMIx_Value_destruct(out);
        libc::free(out.cast());
        v
    };
    Ok(Some(v))
}

/// PMIx_Publish of `service` = `port` (the default range and persistence).
pub fn publish(service: &str, port: &str) -> Result<()> {
    let p = cstring(port)?;
    let info = info_str(service, &p)?;
    // SAFETY: one valid info whose string `p` outlives the call.
    status("PMIx_Publish", unsafe { PMIx_Publish(&info, 1) })
}

/// PMIx_Lookup of `service`: None when nothing is published under it.
pub fn lookup(service: &str) -> Result<Option<String>> {
    // SAFETY: pmix_pdata_t is plain data; all zeros is what PMIX_PDATA_CONSTRUCT writes.
    let mut pd: pmix_pdata_t = unsafe { core::mem::zeroed() };
    pd.key = key_buf(service)?;
    // SAFETY: one valid pdata; no info.
    let rc = unsafe { PMIx_Lookup(&mut pd, 1, core::ptr::null(), 0) };
    if rc == PMIX_ERR_NOT_FOUND {
        return Ok(None);
    }
    status("PMIx_Lookup", rc)?;
    let v = pval(&pd.value);
    // SAFETY: the value libpmix wrote into our pdata (its contents are libpmix's allocations).
    unsafe { PMIx_Value_destruct(&mut pd.value) };
    match v {
        PVal::Str(s) => Ok(Some(s)),
        PVal::Other(0) => Ok(None),
        other => Err(Pmi2Error::new(
            crate::codes::PMI2_ERR_OTHER,
            format!("a published value that is not a string: {other:?}"),
        )),
    }
}

/// PMIx_Unpublish of `service`.
pub fn unpublish(service: &str) -> Result<()> {
    let k = cstring(service)?;
    let mut keys = [k.as_ptr().cast_mut(), core::ptr::null_mut()];
    // SAFETY: a NULL-terminated array of one NUL-terminated key; no info.
    status("PMIx_Unpublish", unsafe {
        PMIx_Unpublish(keys.as_mut_ptr(), core::ptr::null(), 0)
    })
}

/// One application of a spawn: command, its arguments (after argv[0]), process count.
pub struct App {
    pub cmd: String,
    pub args: Vec<String>,
    pub maxprocs: i32,
}

/// PMIx_Spawn of `apps`: the new job's namespace.
pub fn spawn(apps: &[App]) -> Result<String> {
    // The strings and arrays the pmix_app_t point into, alive across the call.
    let mut strings: Vec<Vec<CString>> = Vec::with_capacity(apps.len());
    for a in apps {
        let mut v = vec![cstring(&a.cmd)?];
        for s in &a.args {
            v.push(cstring(s)?);
        }
        strings.push(v);
    }
    let mut argvs: Vec<Vec<*mut c_char>> = strings
        .iter()
        .map(|v| {
            let mut p: Vec<*mut c_char> = v.iter().map(|s| s.as_ptr().cast_mut()).collect();
            p.push(core::ptr::null_mut());
            p
        })
        .collect();
    let papps: Vec<pmix_app_t> = apps
        .iter()
        .zip(argvs.iter_mut())
        .map(|(a, argv)| pmix_app_t {
            cmd: argv[0],
            argv: argv.as_mut_ptr(),
            env: core::ptr::null_mut(),
            cwd: core::ptr::null_mut(),
            maxprocs: a.maxprocs,
            info: core::ptr::null_mut(),
            ninfo: 0,
        })
        .collect();
    let mut ns = [0 as c_char; NSPACE_BUF];
    // SAFETY: `papps` point into `strings`/`argvs`, alive across the call; `ns` is a
    // PMIX_MAX_NSLEN+1 buffer.
    status("PMIx_Spawn", unsafe {
        PMIx_Spawn(
            core::ptr::null(),
            0,
            papps.as_ptr(),
            papps.len(),
            ns.as_mut_ptr(),
        )
    })?;
    Ok(nspace_text(&ns))
}

/// PMIx_Connect (`connect`) or PMIx_Disconnect of every process of `a` and `b`.
pub fn connect(a: &str, b: &str, connect: bool) -> Result<()> {
    let procs = [proc_of(a, RANK_WILDCARD)?, proc_of(b, RANK_WILDCARD)?];
    if connect {
        // SAFETY: two valid procs; no info.
        status("PMIx_Connect", unsafe {
            PMIx_Connect(procs.as_ptr(), 2, core::ptr::null(), 0)
        })
    } else {
        // SAFETY: two valid procs; no info.
        status("PMIx_Disconnect", unsafe {
            PMIx_Disconnect(procs.as_ptr(), 2, core::ptr::null(), 0)
        })
    }
}
