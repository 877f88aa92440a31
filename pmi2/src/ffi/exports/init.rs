//! Starting and stopping: PMI2_Init (both ABIs), PMI2_Finalize, PMI2_Initialized, PMI2_Abort,
//! and the job's rank and size as Slurm's pmi2.h asks for them.

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use super::{bytes, code, null, set};
use crate::codes::*;
use crate::state;

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
