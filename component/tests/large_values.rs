//! Memory of the server's path for a large posted value: a byte object handed to the component
//! as a C `pmix_value_t` (`rshm_server_store`: the abi conversion, then `Server::store`) must
//! not cost the server more than a small multiple of its size at the peak. Alone in its test
//! binary: the peak is the process's (`VmHWM`, reset through `/proc/self/clear_refs`).

// The C exports are in this crate's server-shim; link it.
extern crate rshm_server;

use core::ffi::{c_char, c_void};

use rshm_abi::c::c_info;
use rshm_abi::types::status::PMIX_SUCCESS;
use rshm_abi::types::{
    pmix_byte_object_t, pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_data, pmix_value_t,
    NSPACE_BUF,
};
use rshm_gds::value::types as t;
use rshm_gds::{Info, Value};

extern "C" {
    fn rshm_server_open(
        info: *const pmix_info_t,
        ninfo: usize,
        out: *mut *mut c_void,
    ) -> pmix_status_t;
    fn rshm_server_store(
        s: *mut c_void,
        proc_: *const pmix_proc_t,
        scope: u8,
        key: *const c_char,
        value: *const pmix_value_t,
    ) -> pmix_status_t;
    fn rshm_server_close(s: *mut c_void) -> pmix_status_t;
}

/// `VmRSS` and `VmHWM` of this process, bytes.
fn rss_and_peak() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"))
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Reset `VmHWM` to the current RSS.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs");
}

#[test]
fn a_large_posted_byte_object_peaks_below_two_and_a_half_times_its_size() {
    const MIB: u64 = 1 << 20;
    let size = 64 * MIB as usize;
    let base = tempfile::tempdir().expect("tempdir");
    let dir = Info::new(
        rshm_abi::env::INFO_DIR,
        Value::String(base.path().to_str().expect("utf-8 path").into()),
    );
    let info = [c_info(&dir).expect("info")];
    let mut s: *mut c_void = core::ptr::null_mut();
    // SAFETY: one valid info; `s` a valid location.
    let rc = unsafe { rshm_server_open(info.as_ptr(), 1, &mut s) };
    assert_eq!(rc, PMIX_SUCCESS);
    let mut proc_ = pmix_proc_t {
        nspace: [0; NSPACE_BUF],
        rank: 0,
    };
    proc_.nspace[..2].copy_from_slice(&[b'n' as c_char, b's' as c_char]);
    // The caller's value (libpmix's kval in the component), every page touched.
    let mut bytes = vec![0xa5u8; size];
    let c = pmix_value_t {
        type_: t::BYTE_OBJECT,
        data: pmix_value_data {
            bo: pmix_byte_object_t {
                bytes: bytes.as_mut_ptr().cast(),
                size,
            },
        },
    };
    reset_peak();
    let (before, _) = rss_and_peak();
    // SAFETY: the handle from open; a valid proc, key and value (`c` over `bytes`, live).
    let rc = unsafe { rshm_server_store(s, &proc_, 3, c"big".as_ptr(), &c) }; // PMIX_GLOBAL
    assert_eq!(rc, PMIX_SUCCESS);
    let (after, peak) = rss_and_peak();
    let (growth, left) = (peak.saturating_sub(before), after.saturating_sub(before));
    eprintln!(
        "posted byte object of {} MiB: server peak RSS +{} MiB, +{} MiB after the store",
        size as u64 / MIB,
        growth / MIB,
        left / MIB
    );
    assert!(
        growth <= size as u64 * 5 / 2,
        "peak RSS grew {} MiB for a {} MiB byte object",
        growth / MIB,
        size as u64 / MIB
    );
    drop(bytes);
    // SAFETY: the handle from open, not used again.
    assert_eq!(unsafe { rshm_server_close(s) }, PMIX_SUCCESS);
}
