//! Jobs: PMI2_Job_GetId, PMI2_Job_Spawn (both ABIs), PMI2_Job_Connect and PMI2_Job_Disconnect.

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use super::{bytes, code, copy_out, MPID_Info, PMI2_Connect_comm_t};
use crate::check;
use crate::codes::*;
use crate::ffi::pmix::App;
use crate::state;

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
