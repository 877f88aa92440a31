//! Unit tests of the C ABI: calls through the exported functions, as C makes them.

use super::*;
use rshm_abi::types::status::*;
use rshm_gds::{Info, Value};

/// A server on a fresh directory (kept alive by the returned TempDir).
fn open() -> (tempfile::TempDir, *mut rshm_server_t) {
    let dir = tempfile::tempdir().expect("tempdir");
    let info = rshm_abi::c::c_info(&Info {
        key: rshm_abi::env::INFO_DIR.into(),
        flags: 0,
        value: Value::String(dir.path().display().to_string()),
    })
    .expect("info");
    let mut s = core::ptr::null_mut();
    // SAFETY: one valid info and a valid out location.
    assert_eq!(unsafe { rshm_server_open(&info, 1, &mut s) }, PMIX_SUCCESS);
    (dir, s)
}

#[test]
fn a_panic_fails_only_its_own_call() {
    let (_dir, s) = open();
    // SAFETY: `s` is an open handle; (NULL, 0) is an empty array.
    let resources = || unsafe { rshm_server_register_resources(s, core::ptr::null(), 0) };
    assert_eq!(resources(), PMIX_SUCCESS);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    fault::panic_next_lock();
    let status = resources();
    std::panic::set_hook(hook);
    assert_eq!(status, PMIX_ERROR);
    assert!(
        rshm_abi::last_error().contains("panic caught"),
        "{}",
        rshm_abi::last_error()
    );
    // The lock the panic unwound through is usable: the next calls succeed.
    assert_eq!(resources(), PMIX_SUCCESS, "{}", rshm_abi::last_error());
    // SAFETY: `s` is open and not used again.
    assert_eq!(unsafe { rshm_server_close(s) }, PMIX_SUCCESS);
}

#[test]
fn a_refused_value_is_withdrawn_so_the_older_one_is_no_longer_read() {
    use rshm_gds::jobdata::TargetRank;
    let (_dir, s) = open();
    let mut proc = pmix_proc_t {
        nspace: [0; NSPACE_BUF],
        rank: 0,
    };
    for (d, b) in proc.nspace.iter_mut().zip(b"ns") {
        *d = *b as c_char;
    }
    let key = c"k";
    let mut v1 = rshm_abi::c::zeroed_value();
    rshm_abi::c::write_value(&mut v1, &Value::String("v1".into())).expect("value");
    // A PMIX_DATA_BUFFER (65): a type the store does not hold.
    let mut buffer = rshm_abi::c::zeroed_value();
    buffer.type_ = 65;
    let read = || {
        // SAFETY: `s` is an open handle; its path is a NUL-terminated string.
        let path = unsafe { std::ffi::CStr::from_ptr(rshm_server_path(s)) };
        let r = rshm_gds::Reader::attach(std::path::Path::new(path.to_str().unwrap())).unwrap();
        let pin = r.pin();
        rshm_gds::modex::find(&r, &pin, "ns", TargetRank::Rank(0), "k", |_| true, None)
            .map(|(v, _)| v.to_value())
    };
    let mut whole = true;
    // SAFETY: (every call) `s` is open; `proc`, `key` and the values are valid.
    unsafe {
        assert_eq!(
            rshm_server_store(s, &proc, 3, key.as_ptr(), &v1),
            PMIX_SUCCESS
        );
        assert_ne!(
            rshm_server_store(s, &proc, 3, key.as_ptr(), &buffer),
            PMIX_SUCCESS
        );
        // Refused: the store still holds the older value, until it is withdrawn.
        assert_eq!(read().unwrap(), Value::String("v1".into()));
        assert_eq!(
            rshm_server_withdraw(s, &proc, key.as_ptr(), &mut whole),
            PMIX_SUCCESS
        );
        assert!(!whole);
        assert!(matches!(read(), Err(rshm_gds::Error::NotFound)));
        assert_eq!(
            rshm_server_withdraw(s, &proc, key.as_ptr(), core::ptr::null_mut()),
            PMIX_SUCCESS
        );
        assert_eq!(
            rshm_server_withdraw(s, &proc, core::ptr::null(), core::ptr::null_mut()),
            PMIX_ERR_BAD_PARAM
        );
        assert_eq!(rshm_server_withdraw_posted(s, c"ns".as_ptr()), PMIX_SUCCESS);
        assert_eq!(
            rshm_server_withdraw_posted(s, core::ptr::null()),
            PMIX_ERR_BAD_PARAM
        );
        rshm_abi::c::destruct_value(&mut v1);
        assert_eq!(rshm_server_close(s), PMIX_SUCCESS);
    }
}

#[test]
fn staged_values_are_published_by_one_flush_and_counted() {
    let (_dir, s) = open();
    let mut proc = pmix_proc_t {
        nspace: [0; NSPACE_BUF],
        rank: 0,
    };
    for (d, b) in proc.nspace.iter_mut().zip(b"ns") {
        *d = *b as c_char;
    }
    let mut v = rshm_abi::c::zeroed_value();
    rshm_abi::c::write_value(&mut v, &Value::String("v".into())).expect("value");
    // A PMIX_DATA_BUFFER (65): a type the store does not hold.
    let mut buffer = rshm_abi::c::zeroed_value();
    buffer.type_ = 65;
    let mut stats = rshm_server_stats_t::default();
    let mut flushed = rshm_flushed_t::default();
    let mut first = false;
    // SAFETY: (every call) `s` is open; `proc`, the keys, values and out locations are valid.
    unsafe {
        assert_eq!(rshm_server_stats(s, &mut stats), PMIX_SUCCESS);
        let before = stats.publications;
        assert_eq!(
            rshm_server_stage(s, &proc, 3, c"a".as_ptr(), &v, &mut first),
            PMIX_SUCCESS
        );
        assert!(first);
        assert_eq!(
            rshm_server_stage(s, &proc, 1, c"b".as_ptr(), &v, &mut first),
            PMIX_SUCCESS
        );
        assert!(!first);
        assert_eq!(
            rshm_server_stage(s, &proc, 3, c"c".as_ptr(), &buffer, core::ptr::null_mut()),
            PMIX_SUCCESS
        );
        assert_eq!(
            rshm_server_stage(s, &proc, 3, c"d".as_ptr(), core::ptr::null(), &mut first),
            PMIX_ERR_BAD_PARAM
        );
        assert!(!rshm_server_staged_by_other(s, &proc));
        proc.rank = 1;
        assert!(rshm_server_staged_by_other(s, &proc));
        assert!(!rshm_server_staged_by_other(s, core::ptr::null()));
        assert_eq!(rshm_server_stats(s, &mut stats), PMIX_SUCCESS);
        assert_eq!(stats.publications, before);
        assert_eq!(rshm_server_flush(s, &mut flushed), PMIX_SUCCESS);
        assert_eq!(
            flushed,
            rshm_flushed_t {
                values: 3,
                refused: 1,
                withdrawn: RSHM_WITHDRAWN_NONE
            }
        );
        assert_eq!(rshm_server_stats(s, &mut stats), PMIX_SUCCESS);
        assert_eq!(stats.publications, before + 1);
        assert!(stats.bytes_written > 0 && stats.files_written > 0);
        assert_eq!(rshm_server_flush(s, core::ptr::null_mut()), PMIX_SUCCESS);
        assert_eq!(
            rshm_server_stats(s, core::ptr::null_mut()),
            PMIX_ERR_BAD_PARAM
        );
        assert_eq!(
            rshm_server_flush(core::ptr::null_mut(), &mut flushed),
            PMIX_ERR_BAD_PARAM
        );
        rshm_abi::c::destruct_value(&mut v);
        assert_eq!(rshm_server_close(s), PMIX_SUCCESS);
    }
}

#[test]
fn fence_arrays_are_checked_before_they_are_read() {
    let (_dir, s) = open();
    // SAFETY: (every call) `s` is an open handle; the arrays are refused before any element
    // is read, which is what is tested.
    unsafe {
        assert_eq!(
            rshm_server_store_fence(s, core::ptr::null(), 0),
            PMIX_SUCCESS
        );
        assert_eq!(
            rshm_server_store_fence(s, core::ptr::null(), 3),
            PMIX_ERR_BAD_PARAM
        );
        let dangling = core::ptr::NonNull::<rshm_posted_t>::dangling().as_ptr();
        assert_eq!(
            rshm_server_store_fence(s, dangling, usize::MAX / 64),
            PMIX_ERR_BAD_PARAM
        );
        assert_eq!(
            rshm_server_store_fence(s, dangling.cast::<u8>().add(1).cast(), 1),
            PMIX_ERR_BAD_PARAM
        );
        assert_eq!(rshm_server_close(s), PMIX_SUCCESS);
    }
}
