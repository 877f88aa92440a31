//! The C ABI of `include/pmi2.h`. Every function's body runs inside `abi`'s panic boundary
//! (`ffi_or`: a panic is PMI2_FAIL, never an unwind into C), checks its pointers and lengths,
//! and writes its outputs only on success.

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use crate::check;
use crate::codes::*;
use crate::ffi::pmix::App;
use crate::state;

/// Opaque: never dereferenced (pmi2.h's `MPID_Info`).
#[repr(C)]
pub struct MPID_Info {
    _private: [u8; 0],
}

/// pmi2.h's `PMI2_Connect_comm_t`: not used by this library (PMIx connects the jobs).
#[repr(C)]
pub struct PMI2_Connect_comm_t {
    _private: [u8; 0],
}

/// Run an export's body and return its outcome as the return code (and a message on stderr
/// when `RSHM_MCA_pmi2_verbose` > 0, or the deprecated `RSHM_PMI2_VERBOSE` is set). Each export calls it inside `ffi_or(PMI2_FAIL, ..)`: a
/// panic is PMI2_FAIL.
fn code(name: &str, body: impl FnOnce() -> Result<()>) -> c_int {
    match body() {
        Ok(()) => PMI2_SUCCESS,
        Err(e) => {
            if rshm_abi::verbose::level("RSHM_MCA_pmi2_verbose", "RSHM_PMI2_VERBOSE") > 0 {
                eprintln!("{name}: {e}");
            }
            e.code
        }
    }
}

fn null(what: &str) -> Pmi2Error {
    Pmi2Error::new(PMI2_ERR_INVALID_ARG, format!("NULL {what}"))
}

/// The bytes of a NUL-terminated string, looked at up to `max` bytes (a longer one is
/// returned as `max` bytes, which the checks then refuse as too long).
///
/// # Safety
/// `p` is NULL or readable up to its NUL or `max` bytes.
unsafe fn bytes<'a>(p: *const c_char, max: usize, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: readable up to the NUL or `max` bytes (caller contract); strnlen reads no further.
    let n = unsafe { libc::strnlen(p, max) };
    // SAFETY: `n` readable bytes at `p`.
    Ok(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), n) })
}

/// Copy `s` and its NUL into `buf` of `len` bytes, or fail with PMI2_ERR_INVALID_LENGTH.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
unsafe fn copy_out(buf: *mut c_char, len: c_int, s: &str, what: &str) -> Result<()> {
    if buf.is_null() {
        return Err(null(what));
    }
    if len < 0 || s.len() >= len as usize {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_LENGTH,
            format!("{what}: {} bytes and a NUL in a buffer of {len}", s.len()),
        ));
    }
    // SAFETY: `buf` holds `len` > s.len() bytes (checked above; caller contract).
    unsafe {
        core::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        *buf.add(s.len()) = 0;
    }
    Ok(())
}

/// Write `v` into a caller's int, when it gave one.
///
/// # Safety
/// `p` is NULL or a writable int.
unsafe fn set(p: *mut c_int, v: c_int) {
    if !p.is_null() {
        // SAFETY: a writable int (caller contract).
        unsafe { *p = v };
    }
}

/// Copy ints into `array` of `len` entries, and their count into `out_len`.
///
/// # Safety
/// `array` writable for `len` ints, `out_len` a writable int (or NULL).
unsafe fn copy_ints(array: *mut c_int, len: c_int, out_len: *mut c_int, v: &[i64]) -> Result<()> {
    if array.is_null() && !v.is_empty() {
        return Err(null("array"));
    }
    if len < 0 || v.len() > len as usize {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_LENGTH,
            format!("{} integers in an array of {len}", v.len()),
        ));
    }
    let v: Vec<c_int> = v
        .iter()
        .map(|&x| c_int::try_from(x))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_VAL, "an integer out of int's range"))?;
    // SAFETY: `array` holds `len` >= v.len() ints (checked; caller contract).
    unsafe { core::ptr::copy_nonoverlapping(v.as_ptr(), array, v.len()) };
    // SAFETY: caller contract.
    unsafe { set(out_len, v.len() as c_int) };
    Ok(())
}

/// PMI2_Init of either ABI (`version` None: Slurm's four outputs). Every output is required:
/// a NULL one is PMI2_ERR_INVALID_ARG, and nothing is initialized.
///
/// # Safety
/// Each pointer is NULL or a writable int.
unsafe fn init(
    name: &str,
    spawned: *mut c_int,
    size: *mut c_int,
    rank: *mut c_int,
    appnum: *mut c_int,
    version: Option<(*mut c_int, *mut c_int)>,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code(name, || {
            let (v, sv) = version.unwrap_or((spawned, spawned));
            for (p, what) in [
                (spawned, "spawned"),
                (size, "size"),
                (rank, "rank"),
                (appnum, "appnum"),
                (v, "version"),
                (sv, "subversion"),
            ] {
                if p.is_null() {
                    return Err(null(what));
                }
            }
            let s = state::init()?;
            // SAFETY: each is a writable int (checked non-NULL; caller contract).
            unsafe {
                set(spawned, s.spawned.into());
                set(size, s.size as c_int);
                set(rank, s.rank as c_int);
                set(appnum, s.appnum);
                if version.is_some() {
                    set(v, 2);
                    set(sv, 0);
                }
            }
            Ok(())
        })
    })
}

/// # Safety
/// Each pointer is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Init(
    spawned: *mut c_int,
    size: *mut c_int,
    rank: *mut c_int,
    appnum: *mut c_int,
    version: *mut c_int,
    subversion: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe {
            init(
                "PMI2_Init",
                spawned,
                size,
                rank,
                appnum,
                Some((version, subversion)),
            )
        }
    })
}

/// PMI2_Init of Slurm's and MPICH's pmi2.h (no version outputs): `libpmi2.so.0`'s.
///
/// # Safety
/// Each pointer is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn rshm_pmi2_slurm_init(
    spawned: *mut c_int,
    size: *mut c_int,
    rank: *mut c_int,
    appnum: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe { init("PMI2_Init", spawned, size, rank, appnum, None) }
    })
}

/// PMI2_Job_GetRank (Slurm's and MPICH's pmi2.h): this process's rank.
///
/// # Safety
/// `rank` NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Job_GetRank(rank: *mut c_int) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Job_GetRank", || {
            let s = state::current()?;
            if rank.is_null() {
                return Err(null("rank"));
            }
            // SAFETY: a writable int (caller contract).
            unsafe { set(rank, s.rank as c_int) };
            Ok(())
        })
    })
}

/// PMI2_Info_GetSize (Slurm's and MPICH's pmi2.h): the job's size, as Slurm's libpmi2 answers.
///
/// # Safety
/// `size` NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetSize(size: *mut c_int) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetSize", || {
            let s = state::current()?;
            if size.is_null() {
                return Err(null("size"));
            }
            // SAFETY: a writable int (caller contract).
            unsafe { set(size, s.size as c_int) };
            Ok(())
        })
    })
}

/// PMIX_Ring (Slurm's and MPICH's pmi2.h): collective; `value` (shorter than `maxvalue`) in,
/// the left and right neighbours' values out (each buffer `maxvalue` bytes).
///
/// # Safety
/// `value` NUL-terminated; `left`, `right` writable for `maxvalue` bytes; `rank`, `ranks`
/// writable ints.
#[no_mangle]
pub unsafe extern "C" fn PMIX_Ring(
    value: *const c_char,
    rank: *mut c_int,
    ranks: *mut c_int,
    left: *mut c_char,
    right: *mut c_char,
    maxvalue: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMIX_Ring", || {
            let s = state::current()?;
            if rank.is_null() || ranks.is_null() || left.is_null() || right.is_null() {
                return Err(null("output"));
            }
            let max = usize::try_from(maxvalue).unwrap_or(0).min(MAX_VALLEN);
            if max == 0 {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_LENGTH,
                    format!("maxvalue {maxvalue}"),
                ));
            }
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(unsafe { bytes(value, max, "value") }?, max)?;
            let (l, r) = s.ring(v)?;
            if l.len() >= max || r.len() >= max {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_LENGTH,
                    format!("a neighbour's value does not fit {maxvalue} bytes"),
                ));
            }
            // SAFETY: caller contract; both fit (checked).
            unsafe {
                copy_out(left, maxvalue, &l, "left")?;
                copy_out(right, maxvalue, &r, "right")?;
                set(rank, s.rank as c_int);
                set(ranks, s.size as c_int);
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn PMI2_Finalize() -> c_int {
    ffi_or(PMI2_FAIL, || code("PMI2_Finalize", state::finalize))
}

#[no_mangle]
pub extern "C" fn PMI2_Initialized() -> c_int {
    ffi_or(0, || state::initialized().into())
}

/// # Safety
/// `msg` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Abort(flag: c_int, msg: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Abort", || {
            let s = state::current()?;
            let text = if msg.is_null() {
                String::new()
            } else {
                // SAFETY: NUL-terminated (caller contract); read up to MAX_MSG bytes.
                String::from_utf8_lossy(unsafe { bytes(msg, MAX_MSG, "msg") }?).into_owned()
            };
            if s.singleton.is_some() {
                // No process manager to tell: say it, and end the process (the job).
                eprintln!("PMI2_Abort: {text}");
                std::process::exit(1);
            }
            let whom = (flag == 0).then_some((s.ns.as_str(), s.rank));
            crate::ffi::pmix::abort(1, &text, whom)
        })
    })
}

/// # Safety
/// `jobId` writable for `jobIdSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Job_GetId(job_id: *mut c_char, job_id_size: c_int) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Job_GetId", || {
            let s = state::current()?;
            // SAFETY: caller contract.
            unsafe { copy_out(job_id, job_id_size, &s.ns, "jobId") }
        })
    })
}

/// # Safety
/// `cmds[i]` NUL-terminated strings, `argvs` NULL or `argvs[i]` NULL or arrays of
/// strings (`argcs` NULL: NULL-terminated; else `argcs[i]` of them), `maxprocs` `count` ints, `info_keyval_sizes` NULL or `count` ints,
/// `jobId` writable for `jobIdSize` bytes, `errors` NULL or `count` writable ints.
// The arguments of PMI2_Job_Spawn (both forms), passed on as they came.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn(
    count: c_int,
    cmds: *const *const c_char,
    argcs: *const c_int,
    argvs: *const *const *const c_char,
    maxprocs: *const c_int,
    info_keyval_sizes: *const c_int,
    _info_keyval_vectors: *const *const MPID_Info,
    preput_keyval_size: c_int,
    _preput_keyval_vector: *const *const MPID_Info,
    job_id: *mut c_char,
    job_id_size: c_int,
    errors: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Job_Spawn", || {
            let s = state::current()?;
            if count <= 0 || cmds.is_null() || maxprocs.is_null() {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_ARG,
                    "no application to spawn",
                ));
            }
            let n = count as usize;
            // Info and preput entries are MPI info objects this library cannot read.
            // SAFETY: NULL or `count` ints (caller contract).
            let infos = (!info_keyval_sizes.is_null())
                .then(|| unsafe { core::slice::from_raw_parts(info_keyval_sizes, n) });
            if preput_keyval_size != 0 || infos.is_some_and(|i| i.iter().any(|&x| x != 0)) {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_ARG,
                    "info and preput key-values are not supported",
                ));
            }
            let mut apps = Vec::with_capacity(n);
            for i in 0..n {
                // SAFETY: `count` entries (caller contract).
                let (cmd, np) = unsafe { (*cmds.add(i), *maxprocs.add(i)) };
                // SAFETY: NUL-terminated (caller contract).
                let cmd = check::value(unsafe { bytes(cmd, 4096, "cmd") }?, 4096)?.to_owned();
                let mut args = Vec::new();
                let mut a = if argvs.is_null() {
                    core::ptr::null()
                } else {
                    // SAFETY: `argvs` has `count` entries, each NULL or NULL-terminated.
                    unsafe { *argvs.add(i) }
                };
                // Slurm's form: `argcs[i]` arguments (or up to a NULL).
                let mut left = if argcs.is_null() {
                    usize::MAX
                } else {
                    // SAFETY: `count` ints (caller contract).
                    let c = unsafe { *argcs.add(i) };
                    usize::try_from(c).map_err(|_| {
                        Pmi2Error::new(PMI2_ERR_INVALID_ARG, format!("argcs[{i}] {c}"))
                    })?
                };
                while !a.is_null() && left > 0 {
                    left -= 1;
                    // SAFETY: a NULL-terminated array of strings, or one of `argcs[i]`
                    // (caller contract).
                    let p = unsafe { *a };
                    if p.is_null() {
                        break;
                    }
                    // SAFETY: NUL-terminated (caller contract).
                    args.push(check::value(unsafe { bytes(p, 4096, "argv") }?, 4096)?.to_owned());
                    // SAFETY: the array goes on up to its NULL.
                    a = unsafe { a.add(1) };
                }
                if np <= 0 {
                    return Err(Pmi2Error::new(
                        PMI2_ERR_INVALID_ARG,
                        format!("maxprocs {np}"),
                    ));
                }
                apps.push(App {
                    cmd,
                    args,
                    maxprocs: np,
                });
            }
            let ns = s.spawn(&apps)?;
            // SAFETY: caller contract.
            unsafe { copy_out(job_id, job_id_size, &ns, "jobId") }?;
            if !errors.is_null() {
                for i in 0..n {
                    // SAFETY: `count` writable ints (caller contract).
                    unsafe { *errors.add(i) = PMI2_SUCCESS };
                }
            }
            Ok(())
        })
    })
}

/// # Safety
/// As [`spawn`], without `argcs`.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Job_Spawn(
    count: c_int,
    cmds: *const *const c_char,
    argvs: *const *const *const c_char,
    maxprocs: *const c_int,
    info_keyval_sizes: *const c_int,
    info_keyval_vectors: *const *const MPID_Info,
    preput_keyval_size: c_int,
    preput_keyval_vector: *const *const MPID_Info,
    job_id: *mut c_char,
    job_id_size: c_int,
    errors: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe {
            spawn(
                count,
                cmds,
                core::ptr::null(),
                argvs,
                maxprocs,
                info_keyval_sizes,
                info_keyval_vectors,
                preput_keyval_size,
                preput_keyval_vector,
                job_id,
                job_id_size,
                errors,
            )
        }
    })
}

/// PMI2_Job_Spawn of Slurm's and MPICH's pmi2.h (`argcs[i]` arguments in `argvs[i]`):
/// `libpmi2.so.0`'s.
///
/// # Safety
/// As [`spawn`].
#[no_mangle]
pub unsafe extern "C" fn rshm_pmi2_slurm_job_spawn(
    count: c_int,
    cmds: *const *const c_char,
    argcs: *const c_int,
    argvs: *const *const *const c_char,
    maxprocs: *const c_int,
    info_keyval_sizes: *const c_int,
    info_keyval_vectors: *const *const MPID_Info,
    preput_keyval_size: c_int,
    preput_keyval_vector: *const *const MPID_Info,
    job_id: *mut c_char,
    job_id_size: c_int,
    errors: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe {
            spawn(
                count,
                cmds,
                argcs,
                argvs,
                maxprocs,
                info_keyval_sizes,
                info_keyval_vectors,
                preput_keyval_size,
                preput_keyval_vector,
                job_id,
                job_id_size,
                errors,
            )
        }
    })
}

/// # Safety
/// `jobId` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Job_Connect(
    job_id: *const c_char,
    _conn: *mut PMI2_Connect_comm_t,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Job_Connect", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let job = check::job_id(unsafe { bytes(job_id, 256, "jobId") }?)?;
            s.connect(job, true)
        })
    })
}

/// # Safety
/// `jobId` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Job_Disconnect(job_id: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Job_Disconnect", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let job = check::job_id(unsafe { bytes(job_id, 256, "jobId") }?)?;
            s.connect(job, false)
        })
    })
}

/// # Safety
/// `key` and `value` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn PMI2_KVS_Put(key: *const c_char, value: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Put", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let k = check::key(unsafe { bytes(key, MAX_KEYLEN, "key") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(unsafe { bytes(value, MAX_VALLEN, "value") }?, MAX_VALLEN)?;
            s.kvs_put(k, v)
        })
    })
}

#[no_mangle]
pub extern "C" fn PMI2_KVS_Fence() -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Fence", || {
            state::current().and_then(|s| s.kvs_fence())
        })
    })
}

/// The value written by PMI2_KVS_Get: its length, or the negative of the buffer it needs.
fn kvs_copy(value: *mut c_char, max: c_int, v: &str) -> c_int {
    let need = v.len() + 1;
    if max <= 0 || value.is_null() || need > max as usize {
        return -(need.min(c_int::MAX as usize) as c_int);
    }
    // SAFETY: `value` holds `max` >= need bytes (PMI2_KVS_Get's contract).
    unsafe {
        core::ptr::copy_nonoverlapping(v.as_ptr(), value.cast::<u8>(), v.len());
        *value.add(v.len()) = 0;
    }
    v.len() as c_int
}

/// `maxValue` too small (or <= 0, a size probe): `*valLen` is the negative of the buffer
/// needed (the value's length plus its NUL) and `value` is left untouched.
///
/// # Safety
/// `jobId` NULL or NUL-terminated; `key` NUL-terminated; `value` writable for `maxValue`
/// bytes (or NULL for a probe); `valLen` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_KVS_Get(
    job_id: *const c_char,
    src_pmi_id: c_int,
    key: *const c_char,
    value: *mut c_char,
    max_value: c_int,
    val_len: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Get", || {
            let s = state::current()?;
            if val_len.is_null() {
                return Err(null("valLen"));
            }
            let job = if job_id.is_null() {
                None
            } else {
                // SAFETY: NUL-terminated (caller contract).
                let j = unsafe { bytes(job_id, 256, "jobId") }?;
                match j.is_empty() {
                    true => None,
                    false => Some(check::job_id(j)?),
                }
            };
            // SAFETY: NUL-terminated (caller contract).
            let k = check::key(unsafe { bytes(key, MAX_KEYLEN, "key") }?)?;
            match s.kvs_get(job, src_pmi_id, k, |v| kvs_copy(value, max_value, v))? {
                Some(n) => {
                    // SAFETY: checked non-NULL; caller contract.
                    unsafe { *val_len = n };
                    Ok(())
                }
                None => Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_KEY,
                    format!("no value for key {k:?}"),
                )),
            }
        })
    })
}

/// An attribute's value into the caller's buffer and flag; `flag` false when it has none.
///
/// # Safety
/// `value` writable for `len` bytes; `flag` a writable int.
unsafe fn attr_out(
    found: Option<String>,
    value: *mut c_char,
    len: c_int,
    flag: *mut c_int,
) -> Result<()> {
    if flag.is_null() {
        return Err(null("flag"));
    }
    if let Some(v) = &found {
        // SAFETY: caller contract.
        unsafe { copy_out(value, len, v, "value") }?;
    }
    // SAFETY: checked non-NULL.
    unsafe { *flag = found.is_some().into() };
    Ok(())
}

/// # Safety
/// `name` NUL-terminated; `value` writable for `valueLen` bytes; `flag` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetNodeAttr(
    name: *const c_char,
    value: *mut c_char,
    value_len: c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetNodeAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_node_attr(n, wait_for != 0)?;
            // SAFETY: caller contract.
            unsafe { attr_out(found, value, value_len, flag) }
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `array` writable for `arrayLen` ints; `outLen`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetNodeAttrIntArray(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe { node_attr_ints(name, array, array_len, out_len, flag, wait_for) }
    })
}

/// PMI2_Info_GetNodeAttrIntArray of either form. Not exported, and called by both: the exported
/// names may be interposed (`libpmi2.so.0` defines the other form under the same name).
///
/// # Safety
/// As [`PMI2_Info_GetNodeAttrIntArray`].
unsafe fn node_attr_ints(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetNodeAttrIntArray", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_node_attr_ints(n, wait_for != 0)?;
            // SAFETY: caller contract.
            unsafe { ints_out(found, array, array_len, out_len, flag) }
        })
    })
}

/// PMI2_Info_GetNodeAttrIntArray of Slurm's and MPICH's pmi2.h (no `waitFor`: does not wait,
/// as theirs): `libpmi2.so.0`'s.
///
/// # Safety
/// As [`PMI2_Info_GetNodeAttrIntArray`].
#[no_mangle]
pub unsafe extern "C" fn rshm_pmi2_slurm_node_attr_int_array(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe { node_attr_ints(name, array, array_len, out_len, flag, 0) }
    })
}

/// # Safety
/// As [`copy_ints`]; `flag` a writable int.
unsafe fn ints_out(
    found: Option<Vec<i64>>,
    array: *mut c_int,
    len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> Result<()> {
    if flag.is_null() {
        return Err(null("flag"));
    }
    if let Some(v) = &found {
        // SAFETY: caller contract.
        unsafe { copy_ints(array, len, out_len, v) }?;
    } else {
        // SAFETY: caller contract.
        unsafe { set(out_len, 0) };
    }
    // SAFETY: checked non-NULL.
    unsafe { *flag = found.is_some().into() };
    Ok(())
}

/// # Safety
/// `name` and `value` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_PutNodeAttr(name: *const c_char, value: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_PutNodeAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(
                unsafe { bytes(value, MAX_ATTRVALUE, "value") }?,
                MAX_ATTRVALUE,
            )?;
            s.put_node_attr(n, v)
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `value` writable for `valueLen` bytes; `flag` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetJobAttr(
    name: *const c_char,
    value: *mut c_char,
    value_len: c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetJobAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_job_attr(n)?;
            // SAFETY: caller contract.
            unsafe { attr_out(found, value, value_len, flag) }
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `array` writable for `arrayLen` ints; `outLen`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetJobAttrIntArray(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetJobAttrIntArray", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_job_attr_ints(n)?;
            // SAFETY: caller contract.
            unsafe { ints_out(found, array, array_len, out_len, flag) }
        })
    })
}

/// # Safety
/// `service_name` and `port` NUL-terminated; `info_ptr` is not read.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_publish(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
    port: *const c_char,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_publish", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let p = check::value(unsafe { bytes(port, MAX_VALLEN, "port") }?, MAX_VALLEN)?;
            s.publish(n, p)
        })
    })
}

/// # Safety
/// `service_name` NUL-terminated; `port` writable for `portLen` bytes.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_lookup(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
    port: *mut c_char,
    port_len: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_lookup", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            match s.lookup(n)? {
                // SAFETY: caller contract.
                Some(p) => unsafe { copy_out(port, port_len, &p, "port") },
                None => Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_KEY,
                    format!("no service {n:?} published"),
                )),
            }
        })
    })
}

/// # Safety
/// `service_name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_unpublish(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_unpublish", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            s.unpublish(n)
        })
    })
}
