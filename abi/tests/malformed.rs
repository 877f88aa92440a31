//! Malformed C input into the conversion layer: every case is the exact error it must be (its
//! status and message), never a panic or a read out of bounds; a failed write leaves its output
//! `PMIX_UNDEF`; and every value type survives a round trip through its C form (`write_value`
//! then `read_value`).

use core::ffi::c_char;
use core::ptr;

use rshm_abi::c::{
    check_infos, destruct_value, elem_size, read_infos, read_value, reg_infos, write_value,
    zeroed_value,
};
use rshm_abi::types::*;
use rshm_abi::AbiError;
use rshm_gds::jobdata::keys;
use rshm_gds::value::{types as t, Coord, Endpoint, Envar, Geometry, Proc, ProcInfo};
use rshm_gds::{DataArray, Info, Value};

const CYCLE: &str = "values nested too deeply (a cycle?)";
const OUTSIDE: &str = "a value of type PMIX_INFO/PMIX_VALUE outside an array";

fn info(key: &str, ty: u16) -> pmix_info_t {
    let mut i = pmix_info_t {
        key: [0; KEY_BUF],
        flags: 0,
        value: zeroed_value(),
    };
    for (d, b) in i.key.iter_mut().zip(key.bytes()) {
        *d = b as c_char;
    }
    i.value.type_ = ty;
    i
}

/// Read with `read_infos`; the in-place reader of registrations (`reg_infos`) must accept and
/// refuse exactly the same arrays, with the same status.
fn read(infos: &[pmix_info_t]) -> Result<Vec<Info>, AbiError> {
    // SAFETY: a live slice of initialised infos; every pointer inside is NULL or points into
    // this test's own live memory.
    let full = unsafe { read_infos(infos.as_ptr(), infos.len()) };
    // SAFETY: as above.
    let checked = unsafe { check_infos(infos.as_ptr(), infos.len()) };
    assert_eq!(
        full.as_ref().err().map(AbiError::status),
        checked.as_ref().err().map(AbiError::status),
        "read_infos and check_infos disagree: {:?} / {:?}",
        full.as_ref().err(),
        checked.as_ref().err()
    );
    // A registration read in place refuses every malformed array (proc arrays' elements are
    // checked as they are walked).
    // SAFETY: as above.
    let in_place = unsafe { reg_infos(infos.as_ptr(), infos.len()) }
        .map_err(|e| e.to_string())
        .and_then(|view| {
            rshm_gds::jobdata::build(Some("node0"), view)
                .map(drop)
                .map_err(|e| e.to_string())
        });
    if full.is_err() {
        assert!(in_place.is_err(), "reg_infos + build accepted {full:?}");
    }
    full
}

/// `r` is the error `PMIX_ERR_BAD_PARAM` with the message "bad parameter: `msg`".
fn bad_param(r: Result<Vec<Info>, AbiError>, msg: &str) {
    refused(
        r,
        status::PMIX_ERR_BAD_PARAM,
        &format!("bad parameter: {msg}"),
    );
}

/// `r` is an error of this status and message.
fn refused<T: std::fmt::Debug>(r: Result<T, AbiError>, status: pmix_status_t, msg: &str) {
    match r {
        Err(e) => assert_eq!((e.status(), e.to_string().as_str()), (status, msg)),
        Ok(v) => panic!("expected {status} ({msg}), got {v:?}"),
    }
}

#[test]
fn malformed_info_arrays_are_typed_errors() {
    // A key with no NUL in its 512 bytes.
    let mut i = info("k", t::UINT32);
    i.key = [b'a' as c_char; KEY_BUF];
    bad_param(read(&[i]), "unterminated fixed-size string");
    // A key that is not UTF-8.
    let mut i = info("k", t::UINT32);
    i.key[0] = 0xff_u8 as c_char;
    bad_param(read(&[i]), "string is not UTF-8");
    // An unknown type code.
    refused(
        read(&[info("k", 999)]),
        status::PMIX_ERR_NOT_SUPPORTED,
        "not supported: value type 999",
    );
    // A NULL string is a value (Open MPI registers some so; OpenPMIx answers them).
    let got = read(&[info("k", t::STRING)]).expect("a NULL string");
    assert_eq!(got[0].value, Value::NullString);
    // Pointer types with NULL pointers.
    for ty in [t::PROC, t::PROC_INFO, t::DATA_ARRAY, t::COORD, t::ENDPOINT] {
        let msg = format!("NULL pointer in a value of type {ty}");
        bad_param(read(&[info("k", ty)]), &msg);
    }
    // A byte object with a size and no bytes.
    let mut i = info("k", t::BYTE_OBJECT);
    i.value.data.bo = pmix_byte_object_t {
        bytes: ptr::null_mut(),
        size: 10,
    };
    bad_param(read(&[i]), "byte object with a size and no bytes");
    // PMIX_INFO / PMIX_VALUE outside an array.
    for ty in [t::INFO, t::VALUE] {
        bad_param(read(&[info("k", ty)]), OUTSIDE);
    }
    // A NULL array with a length.
    // SAFETY: NULL with a non-zero count is exactly what is being refused.
    bad_param(
        unsafe { read_infos(ptr::null(), 3) },
        "NULL or oversized array",
    );
}

#[test]
fn a_cyclic_data_array_is_refused_not_followed_forever() {
    let mut da = Box::new(pmix_data_array_t {
        type_: t::DATA_ARRAY,
        size: 1,
        array: ptr::null_mut(),
    });
    // The array's only element is the array itself.
    da.array = (&mut *da as *mut pmix_data_array_t).cast();
    let mut i = info("cycle", t::DATA_ARRAY);
    i.value.data.darray = &mut *da;
    bad_param(read(&[i]), CYCLE);
}

#[test]
fn a_cyclic_info_array_and_bad_keys_inside_arrays_are_refused() {
    let elem = Box::into_raw(Box::new(info("inner", t::DATA_ARRAY)));
    let da = Box::into_raw(Box::new(pmix_data_array_t {
        type_: t::INFO,
        size: 1,
        array: elem.cast(),
    }));
    // SAFETY: `elem` is a live box; its value becomes the info array itself (a cycle).
    unsafe { (*elem).value.data.darray = da };
    let mut i = info("pmix.pdata", t::DATA_ARRAY);
    i.value.data.darray = da;
    bad_param(read(&[i]), CYCLE);
    // SAFETY: both came from Box::into_raw above and are not used again.
    unsafe { drop((Box::from_raw(da), Box::from_raw(elem))) };

    // An empty key inside an info array (a top-level one is the caller's business), then a
    // NULL pointer inside one.
    for (key, ty, what) in [
        (
            "",
            t::UINT32,
            "invalid argument: info key of 0 bytes (1..=511)",
        ),
        ("pmix.hname", t::PROC, "NULL pointer in a value of type 22"),
    ] {
        let mut inner = [info(key, ty)];
        let mut da = pmix_data_array_t {
            type_: t::INFO,
            size: 1,
            array: inner.as_mut_ptr().cast(),
        };
        let mut i = info("pmix.pdata", t::DATA_ARRAY);
        i.value.data.darray = &mut da;
        bad_param(read(&[i]), what);
    }
}

/// The registration walks a C array in place, unchecked beforehand (`reg_infos`): whatever
/// it reads specially, or reads and does not store, must still refuse what `read_infos` refuses.
#[test]
fn arrays_the_registration_reads_itself_are_checked_by_that_walk() {
    // A job or session array that holds itself: refused, not followed until the stack runs out.
    for key in [keys::JOB_INFO_ARRAY, keys::SESSION_INFO_ARRAY] {
        let elem = Box::into_raw(Box::new(info(key, t::DATA_ARRAY)));
        let da = Box::into_raw(Box::new(pmix_data_array_t {
            type_: t::INFO,
            size: 1,
            array: elem.cast(),
        }));
        // SAFETY: `elem` is a live box; its value becomes the info array itself (a cycle).
        unsafe { (*elem).value.data.darray = da };
        let mut i = info(key, t::DATA_ARRAY);
        i.value.data.darray = da;
        bad_param(read(&[i]), CYCLE);
        // SAFETY: both came from Box::into_raw above and are not used again.
        unsafe { drop((Box::from_raw(da), Box::from_raw(elem))) };
    }
    // A node array's second PMIX_NODEID (not stored: the first names the node) with a NULL
    // pointer.
    let mut id = info(keys::NODEID, t::UINT32);
    id.value.data.uint32 = 0;
    let mut inner = [id, info(keys::NODEID, t::PROC)];
    let mut da = pmix_data_array_t {
        type_: t::INFO,
        size: 2,
        array: inner.as_mut_ptr().cast(),
    };
    let mut i = info(keys::NODE_INFO_ARRAY, t::DATA_ARRAY);
    i.value.data.darray = &mut da;
    bad_param(read(&[i]), "NULL pointer in a value of type 22");
    // Maps, parsed rather than stored: a NULL string, a regex with a size and no bytes.
    let null_map = [info(keys::NODE_MAP, t::STRING)];
    assert_eq!(
        read(&null_map).expect("a NULL string")[0].value,
        Value::NullString
    );
    // SAFETY: a live slice of initialised infos.
    let view = unsafe { reg_infos(null_map.as_ptr(), null_map.len()) }.expect("view");
    let e = rshm_gds::jobdata::build(Some("node0"), view)
        .map(drop)
        .unwrap_err();
    assert!(e.to_string().contains("pmix.nmap must be a string"), "{e}");
    let mut map = info(keys::PROC_MAP, t::REGEX);
    map.value.data.bo = pmix_byte_object_t {
        bytes: ptr::null_mut(),
        size: 10,
    };
    bad_param(read(&[map]), "byte object with a size and no bytes");
}

#[test]
fn value_arrays_cannot_hide_info_elements() {
    let mut elems = [zeroed_value()];
    elems[0].type_ = t::INFO;
    let mut da = pmix_data_array_t {
        type_: t::VALUE,
        size: 1,
        array: elems.as_mut_ptr().cast(),
    };
    let mut i = info("k", t::DATA_ARRAY);
    i.value.data.darray = &mut da;
    bad_param(read(&[i]), OUTSIDE);
}

/// Every type code with an all-zero payload (NULL pointers, zero sizes) and odd bool bytes:
/// a value or a typed error, never a crash.
#[test]
fn every_type_code_with_empty_payload_is_handled() {
    for ty in 0..=u16::from(u8::MAX) {
        let mut i = info("k", ty);
        if ty == t::BOOL {
            i.value.data.uint8 = 0x7f; // not 0/1: read as a byte, so no invalid bool
        }
        let got = read(&[i]);
        let boxed = [
            t::PROC,
            t::PROC_INFO,
            t::DATA_ARRAY,
            t::COORD,
            t::PROC_CPUSET,
            t::GEOMETRY,
            t::DEVICE_DIST,
            t::ENDPOINT,
            t::PROC_NSPACE,
            t::REGATTR,
            t::DATA_BUFFER,
        ];
        match ty {
            t::STRING => assert_eq!(got.expect("a NULL string")[0].value, Value::NullString),
            t::ENVAR => bad_param(got, "NULL string"),
            t::INFO | t::VALUE => bad_param(got, OUTSIDE),
            _ if boxed.contains(&ty) => {
                bad_param(got, &format!("NULL pointer in a value of type {ty}"))
            }
            t::APP | t::PDATA | t::QUERY => refused(
                got,
                status::PMIX_ERR_NOT_SUPPORTED,
                &format!("not supported: value type {ty}"),
            ),
            _ if ty != t::UNDEF && elem_size(ty).is_none() => refused(
                got,
                status::PMIX_ERR_NOT_SUPPORTED,
                &format!("not supported: value type {ty}"),
            ),
            // Every other known type is a value of that type (zero, empty, or true for the
            // odd bool byte).
            _ => {
                let v = got.unwrap_or_else(|e| panic!("type {ty}: {e}"));
                assert_eq!(v[0].value.type_code(), ty);
                if ty == t::BOOL {
                    assert_eq!(v[0].value, Value::Bool(true));
                }
            }
        }
    }
}

/// A failed write leaves its output `PMIX_UNDEF` and all zero (what it had allocated freed),
/// whether it fails at once or inside an array after writing earlier elements; whatever the
/// output held before (it owns nothing, but its bytes may be anything) is neither read nor freed.
#[test]
fn a_failed_write_leaves_its_output_undef() {
    let with_nul = Value::String("a\0b".into());
    let envar = Value::Envar(Envar {
        name: "A\0B".into(),
        value: "v".into(),
        separator: b':',
    });
    let array = Value::DataArray(Box::new(DataArray {
        elem_type: t::STRING,
        items: vec![Value::String("fine".into()), with_nul.clone()],
    }));
    for v in [
        with_nul,
        array,
        envar,
        Value::Info(Box::new(Info::new("k", Value::Uint32(1)))),
    ] {
        let mut c = zeroed_value();
        c.type_ = t::UINT64;
        // Stale bytes in every word of the union (as an overwritten value leaves them).
        let stale = 0x10 as *mut c_char;
        c.data.envar = pmix_envar_t {
            envar: stale,
            value: stale,
            separator: 1,
        };
        let err = write_value(&mut c, &v).expect_err("refused");
        assert_eq!(err.status(), status::PMIX_ERROR, "{v:?}: {err}");
        assert_eq!(c.type_, t::UNDEF, "{v:?}");
        // SAFETY: after the failed write every byte of the union is zero, which is a valid
        // envar (the union's widest member).
        let e = unsafe { c.data.envar };
        assert!(
            e.envar.is_null() && e.value.is_null() && e.separator == 0,
            "{v:?}"
        );
    }
}

fn roundtrip(v: &Value) {
    let mut c = zeroed_value();
    write_value(&mut c, v).unwrap_or_else(|e| panic!("write {v:?}: {e}"));
    // SAFETY: `c` was just written by write_value: every pointer in it is ours and live.
    let back = unsafe { read_value(&c, 0) }.unwrap_or_else(|e| panic!("read {v:?}: {e}"));
    // Data arrays of fixed-width elements come back packed.
    assert_eq!(back, v.clone().into_packed());
    // SAFETY: `c` was written by write_value and is destructed once.
    unsafe { destruct_value(&mut c) };
    assert_eq!(c.type_, t::UNDEF);
}

#[test]
fn every_value_type_round_trips_through_its_c_form() {
    let coord = Coord {
        view: 1,
        coords: vec![1, 2, 3],
    };
    let values = vec![
        Value::Undef,
        Value::Bool(true),
        Value::Byte(7),
        Value::String("hello".into()),
        Value::Size(1 << 40),
        Value::Pid(-3),
        Value::Int(-4),
        Value::Int8(-5),
        Value::Int16(-6),
        Value::Int32(-7),
        Value::Int64(-8),
        Value::Uint(9),
        Value::Uint8(10),
        Value::Uint16(11),
        Value::Uint32(12),
        Value::Uint64(13),
        Value::Float(1.5),
        Value::Double(2.25),
        Value::Timeval { sec: 5, usec: 6 },
        Value::Time(99),
        Value::Status(-46),
        Value::Proc(Proc {
            nspace: "ns".into(),
            rank: 3,
        }),
        Value::ByteObject(vec![1, 2, 3, 0, 4]),
        Value::Persistence(1),
        Value::Scope(2),
        Value::DataRange(3),
        Value::DataType(4),
        Value::ProcState(5),
        Value::ProcInfo(ProcInfo {
            proc: Proc {
                nspace: "ns".into(),
                rank: 1,
            },
            hostname: "node1".into(),
            executable: "a.out".into(),
            pid: 42,
            exit_code: 0,
            state: 3,
        }),
        Value::array(t::UINT32, vec![Value::Uint32(1), Value::Uint32(2)]),
        Value::array(
            t::STRING,
            vec![Value::String("a".into()), Value::String("".into())],
        ),
        Value::array(t::VALUE, vec![Value::Uint8(1), Value::String("x".into())]),
        Value::info_array([
            ("k1".to_string(), Value::Uint32(1)),
            (
                "k2".to_string(),
                Value::array(t::PROC_RANK, vec![Value::ProcRank(4)]),
            ),
        ]),
        Value::ProcRank(17),
        Value::CompressedString(vec![9, 9]),
        Value::AllocDirective(1),
        Value::IofChannel(2),
        Value::Envar(Envar {
            name: "PATH".into(),
            value: "/bin".into(),
            separator: b':',
        }),
        Value::Coord(coord.clone()),
        Value::Regex(b"pmix[n[1:1-4]]".to_vec()),
        Value::JobState(2),
        Value::LinkState(1),
        Value::Geometry(Geometry {
            fabric: 1,
            uuid: "u".into(),
            osname: "ib0".into(),
            coordinates: vec![coord.clone(), coord],
        }),
        Value::DeviceDistance(rshm_gds::value::DeviceDistance {
            uuid: "u".into(),
            osname: "mlx5_0".into(),
            device_type: 8,
            mindist: 1,
            maxdist: 2,
        }),
        Value::Endpoint(Endpoint {
            uuid: "u".into(),
            osname: "ib0".into(),
            endpt: vec![1, 2],
        }),
        Value::DeviceType(8),
        Value::Locality(0x3),
        Value::CompressedBytes(vec![1]),
        Value::ProcNspace("ns".into()),
        Value::StorMedium(1),
        Value::StorAccess(2),
        Value::StorPersist(3),
        Value::StorAccessType(4),
        Value::DataArray(Box::new(DataArray {
            elem_type: t::DATA_ARRAY,
            items: vec![Value::array(t::INT16, vec![Value::Int16(-1)])],
        })),
    ];
    for v in &values {
        roundtrip(v);
    }
}

/// A stored value that cannot be written out (a string holding a NUL, which C cannot hold)
/// leaves the output `PMIX_UNDEF`, as `rshm_client_get_into` promises, not half typed.
#[test]
fn a_stored_value_that_cannot_be_written_leaves_the_output_undef() {
    use rshm_gds::{part, Reader, Realm, StoreOptions, TableBuilder, Writer};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k.str", &Value::String("a\0b".into()))
        .expect("insert");
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(dir.path().to_owned()),
        sweep: false,
        ..StoreOptions::default()
    })
    .expect("store");
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).expect("put");
    tx.commit().expect("commit");
    let r = Reader::attach(w.path()).expect("attach");
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", part::DATA, Realm::Job, "k.str")
        .expect("get");
    let mut c = zeroed_value();
    let err = rshm_abi::c::write_stored(&mut c, &v).expect_err("a NUL inside");
    assert_eq!(
        (err.status(), err.to_string().as_str()),
        (
            status::PMIX_ERROR,
            "corrupt rshm segment: string with a NUL"
        )
    );
    assert_eq!(c.type_, t::UNDEF);
}
