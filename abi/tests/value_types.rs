//! Every `pmix_data_type_t` a posted or job value can hold, through the store and back: a C
//! value is read by the server's conversion (`read_value`), stored in a table, read by a
//! reader and written out by the client's (`alloc_stored`, what `PMIx_Get` returns); the C
//! value that comes out must hold what went in. The types the store refuses are refused with
//! `PMIX_ERR_NOT_SUPPORTED` (format.md section 7 says why).

use core::ffi::c_char;
use core::ptr;

use rshm_abi::c::{
    alloc_stored, destruct_value, free_value, read_value, write_value, zeroed_value,
};
use rshm_abi::types::*;
use rshm_gds::packed_array::{self as packed, PackedArray};
use rshm_gds::value::{types as t, App, PData, Proc, Query, RegAttr};
use rshm_gds::{part, Info, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};

/// Store each value under its own key, and read each back through the client's conversion.
/// Returns the C values the client got (to be freed with `free_value`).
fn through_store(values: &[Value]) -> Vec<*mut pmix_value_t> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut t = TableBuilder::new();
    for (i, v) in values.iter().enumerate() {
        t.insert(Realm::Proc(0), &format!("k{i}"), v)
            .unwrap_or_else(|e| panic!("insert {v:?}: {e}"));
    }
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
    (0..values.len())
        .map(|i| {
            let v = r
                .get(&pin, "ns", part::DATA, Realm::Proc(0), &format!("k{i}"))
                .expect("get");
            alloc_stored(&v).unwrap_or_else(|e| panic!("write {:?}: {e}", values[i]))
        })
        .collect()
}

/// The C form of `v` (as a host or client would hand it to PMIx).
fn c_value(v: &Value) -> pmix_value_t {
    let mut c = zeroed_value();
    write_value(&mut c, v).unwrap_or_else(|e| panic!("C form of {v:?}: {e}"));
    c
}

fn every_fixed_width_array() -> Vec<Value> {
    let one_of_each = [
        Value::Bool(true),
        Value::Byte(1),
        Value::Int8(-2),
        Value::Uint8(3),
        Value::Persistence(1),
        Value::Scope(2),
        Value::DataRange(3),
        Value::ProcState(4),
        Value::AllocDirective(1),
        Value::JobState(2),
        Value::LinkState(1),
        Value::Command(7),
        Value::Int16(-4),
        Value::Uint16(5),
        Value::DataType(t::DATA_BUFFER),
        Value::IofChannel(2),
        Value::Locality(0x3),
        Value::StorAccessType(2),
        Value::Pid(77),
        Value::Int(-6),
        Value::Int32(-7),
        Value::Status(-46),
        Value::Uint(8),
        Value::Uint32(9),
        Value::ProcRank(10),
        Value::InfoDirectives(0x8000_0000),
        Value::Float(2.5),
        Value::Size(11),
        Value::Int64(-12),
        Value::Time(13),
        Value::Uint64(14),
        Value::DeviceType(0x10),
        Value::StorMedium(1),
        Value::StorAccess(2),
        Value::StorPersist(4),
        Value::Double(0.125),
        Value::Timeval { sec: 15, usec: 16 },
    ];
    one_of_each
        .into_iter()
        .map(|v| Value::array(v.type_code(), vec![v.clone(), v]))
        .collect()
}

fn regattr() -> Value {
    Value::RegAttr(Box::new(RegAttr {
        name: "PMIX_JOB_SIZE".into(),
        key: "pmix.job.size".into(),
        value_type: t::UINT32,
        description: vec!["Number of processes in the job".into(), "line 2".into()],
    }))
}

fn app() -> Value {
    Value::App(Box::new(App {
        cmd: "./a.out".into(),
        argv: vec!["./a.out".into(), "-v".into()],
        env: vec!["A=1".into()],
        cwd: "/tmp".into(),
        maxprocs: 4,
        info: vec![Info::new(
            "pmix.mapby",
            Value::array(t::UINT16, vec![Value::Uint16(2)]),
        )],
    }))
}

fn pdata() -> Value {
    Value::PData(Box::new(PData {
        proc: Proc {
            nspace: "ns".into(),
            rank: 2,
        },
        key: "published".into(),
        value: Value::DataBuffer(vec![7, 7]),
    }))
}

fn query() -> Value {
    Value::Query(Box::new(Query {
        keys: vec!["pmix.qry.ns".into()],
        qualifiers: vec![Info::new("pmix.nspace", Value::String("ns".into()))],
    }))
}

#[test]
fn every_storable_type_comes_back_from_the_store_as_it_went_in() {
    let mut values = vec![
        Value::DataBuffer(b"packed bytes\0\x01\x02".to_vec()),
        Value::DataBuffer(Vec::new()),
        Value::Command(3),
        Value::InfoDirectives(0x0000_0001),
        regattr(),
        Value::RegAttr(Box::new(RegAttr {
            name: String::new(),
            key: "k".into(),
            value_type: t::STRING,
            description: Vec::new(),
        })),
        Value::array(t::DATA_BUFFER, vec![Value::DataBuffer(vec![1, 2, 3])]),
        Value::array(t::REGATTR, vec![regattr(), regattr()]),
        Value::array(
            t::APP,
            vec![
                app(),
                Value::App(Box::new(App {
                    cmd: String::new(),
                    argv: Vec::new(),
                    env: Vec::new(),
                    cwd: String::new(),
                    maxprocs: 0,
                    info: Vec::new(),
                })),
            ],
        ),
        Value::array(t::PDATA, vec![pdata()]),
        Value::array(t::QUERY, vec![query(), query()]),
        Value::array(
            t::VALUE,
            vec![Value::Command(1), Value::DataBuffer(vec![1])],
        ),
        Value::array(
            t::DATA_ARRAY,
            vec![Value::array(t::UINT64, vec![Value::Uint64(1)])],
        ),
        Value::array(t::UINT32, Vec::new()),
        Value::info_array([(
            "nested".to_string(),
            Value::array(t::DOUBLE, vec![Value::Double(1.0)]),
        )]),
    ];
    values.extend(every_fixed_width_array());
    let got = through_store(
        &values
            .iter()
            .map(|v| {
                // What the server stores is what its conversion reads from the C value.
                let c = c_value(v);
                // SAFETY: `c` was written by write_value: every pointer in it is live.
                let read = unsafe { read_value(&c, 0) }.expect("read");
                let mut c = c;
                // SAFETY: written by write_value, destructed once.
                unsafe { destruct_value(&mut c) };
                read
            })
            .collect::<Vec<_>>(),
    );
    for (v, c) in values.iter().zip(got) {
        // SAFETY: `c` came from alloc_stored: a live value whose pointers are its own.
        let back = unsafe { read_value(c, 0) }.expect("read back");
        assert_eq!(back, v.clone().into_packed(), "{v:?}");
        // SAFETY: from alloc_stored, freed once.
        unsafe { free_value(c) };
    }
}

#[test]
fn a_data_buffer_comes_back_unpackable() {
    let payload = b"\x03\x00\x00\x00abc".to_vec();
    let got = through_store(&[Value::DataBuffer(payload.clone())]);
    // SAFETY: from alloc_stored; a data buffer value points to its own buffer.
    unsafe {
        let v = &*got[0];
        assert_eq!(v.type_, t::DATA_BUFFER);
        let db = &*v.data.dbuf;
        assert_eq!(db.bytes_used, payload.len());
        assert_eq!(db.unpack_ptr, db.base_ptr);
        assert_eq!(db.pack_ptr, db.base_ptr.add(payload.len()));
        assert!(db.bytes_allocated >= db.bytes_used);
        let bytes = core::slice::from_raw_parts(db.unpack_ptr.cast::<u8>(), payload.len());
        assert_eq!(bytes, &payload[..]);
        free_value(got[0]);
    }
}

#[test]
fn a_data_buffer_is_stored_as_its_unread_payload() {
    // Half read: what PMIx_Data_copy_payload (OpenPMIx's own store) keeps is the rest.
    let mut bytes = *b"readunread";
    let base = bytes.as_mut_ptr().cast::<c_char>();
    let mut db = pmix_data_buffer_t {
        base_ptr: base,
        // SAFETY: both within `bytes` (10 bytes).
        pack_ptr: unsafe { base.add(10) },
        // SAFETY: as above.
        unpack_ptr: unsafe { base.add(4) },
        bytes_allocated: 10,
        bytes_used: 10,
    };
    let dbp: *mut pmix_data_buffer_t = &mut db;
    let mut c = zeroed_value();
    c.type_ = t::DATA_BUFFER;
    c.data.dbuf = dbp;
    // SAFETY: `c` points to a live buffer over live bytes.
    let v = unsafe { read_value(&c, 0) }.expect("read");
    assert_eq!(v, Value::DataBuffer(b"unread".to_vec()));
    // Unpacked by the wire format (no pack/unpack pointers, as OpenPMIx 4.2.2's unpack leaves a
    // buffer): nothing to read, as OpenPMIx's own copy finds.
    // SAFETY: `dbp` is the live buffer (changed only through it from here on).
    unsafe {
        (*dbp).pack_ptr = ptr::null_mut();
        (*dbp).unpack_ptr = ptr::null_mut();
    }
    // SAFETY: as above.
    let v = unsafe { read_value(&c, 0) }.expect("read");
    assert_eq!(v, Value::DataBuffer(Vec::new()));
    // SAFETY: as above; both pointers within `bytes`.
    unsafe {
        (*dbp).pack_ptr = base;
        (*dbp).unpack_ptr = base.add(4);
    }
    // SAFETY: as above.
    let err = unsafe { read_value(&c, 0) }.expect_err("pack before unpack");
    assert_eq!(err.status(), status::PMIX_ERR_BAD_PARAM);
}

#[test]
fn a_fixed_width_array_is_one_copy_of_its_bytes() {
    let n = 1000u32;
    let v = Value::array(t::UINT32, (0..n).map(Value::Uint32).collect());
    let c = c_value(&v);
    // SAFETY: written by write_value.
    let read = unsafe { read_value(&c, 0) }.expect("read");
    let Value::PackedArray(p) = &read else {
        panic!("not packed: {read:?}");
    };
    assert_eq!(p.elem_type, t::UINT32);
    assert_eq!(p.bytes.len(), 4 * n as usize);
    // The client's array is the C array of uint32_t again.
    let got = through_store(std::slice::from_ref(&read));
    // SAFETY: from alloc_stored: a data array of n uint32_t.
    unsafe {
        let da = &*(*got[0]).data.darray;
        assert_eq!((da.type_, da.size), (t::UINT32, n as usize));
        let elems = core::slice::from_raw_parts(da.array.cast::<u32>(), da.size);
        assert!(elems.iter().copied().eq(0..n));
        free_value(got[0]);
    }
    let mut c = c;
    // SAFETY: written by write_value, destructed once.
    unsafe { destruct_value(&mut c) };
}

#[test]
fn the_packed_widths_are_the_c_element_sizes() {
    for ty in 0..=u16::from(u8::MAX) {
        if let Some(w) = packed::width(ty) {
            assert_eq!(Some(w), rshm_abi::c::elem_size(ty), "type {ty}");
        }
    }
    assert!(PackedArray::from_items(t::STRING, &[]).is_none());
}

#[test]
fn host_pointers_and_types_no_value_holds_are_refused() {
    for ty in [
        t::POINTER,
        t::TOPO,
        t::APP,
        t::PDATA,
        t::KVAL,
        t::QUERY,
        t::PROC_STATS,
        t::DISK_STATS,
        t::NET_STATS,
        t::NODE_STATS,
    ] {
        let mut c = zeroed_value();
        c.type_ = ty;
        let mut dummy = 0u64;
        c.data.ptr = (&mut dummy as *mut u64).cast();
        // SAFETY: the pointer is live; refused types never follow it.
        let err = unsafe { read_value(&c, 0) }.expect_err("refused");
        assert_eq!(err.status(), status::PMIX_ERR_NOT_SUPPORTED, "type {ty}");
    }
}

/// The bytes of the table files of a store holding `v` alone, read from C.
fn table_bytes_of(v: &Value) -> u64 {
    let c = c_value(v);
    // SAFETY: written by write_value.
    let read = unsafe { read_value(&c, 0) }.expect("read");
    let mut c = c;
    // SAFETY: written by write_value, destructed once.
    unsafe { destruct_value(&mut c) };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut t = TableBuilder::new();
    t.insert(Realm::Proc(0), "big", &read).expect("insert");
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(dir.path().to_owned()),
        sweep: false,
        ..StoreOptions::default()
    })
    .expect("store");
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).expect("put");
    tx.commit().expect("commit");
    std::fs::read_dir(w.path())
        .expect("store dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("rshm-tbl-"))
        .map(|e| e.metadata().expect("metadata").len())
        .sum()
}

#[test]
fn a_large_fixed_width_array_costs_its_bytes_in_the_store() {
    // 1M uint32_t: 4 MB of elements. Stored element by element it took ~48 bytes each.
    let n = 1 << 20;
    let v = Value::array(t::UINT32, (0..n).map(Value::Uint32).collect());
    let elems = 4 * n as u64;
    let size = table_bytes_of(&v);
    eprintln!("1M uint32 array: table file {size} bytes for {elems} bytes of elements");
    assert!(
        size <= elems + elems / 4 + 4096,
        "table of {size} bytes for {elems} bytes of elements"
    );
    // Timevals (16 bytes each) too.
    let n = 1 << 16;
    let v = Value::array(
        t::TIMEVAL,
        (0..n).map(|i| Value::Timeval { sec: i, usec: 1 }).collect(),
    );
    let elems = 16 * n as u64;
    let size = table_bytes_of(&v);
    assert!(size <= elems + elems / 4 + 4096, "timevals: {size} bytes");
}

#[test]
fn apps_pdata_and_queries_live_only_in_arrays_of_their_type() {
    for v in [app(), pdata(), query()] {
        assert!(v.check().is_err(), "{v:?} alone");
        assert!(Value::array(t::VALUE, vec![v.clone()]).check().is_err());
        assert!(Value::array(v.type_code(), vec![v.clone()]).check().is_ok());
        let mut c = zeroed_value();
        let err = write_value(&mut c, &v).expect_err("alone");
        assert_eq!(err.status(), status::PMIX_ERROR);
        assert_eq!(c.type_, t::UNDEF);
    }
}
