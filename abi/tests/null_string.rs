//! A `PMIX_STRING` whose pointer is NULL (Open MPI registers `PMIX_LOCALITY_STRING` so for an
//! unbound process; OpenPMIx hash answers it as such): the server's conversion reads it, the
//! store holds it, and the client's conversion gives back a `PMIX_STRING` with a NULL string.

use core::ptr;

use rshm_abi::c::{alloc_stored, free_value, read_value, write_value, zeroed_value};
use rshm_abi::types::*;
use rshm_gds::value::types as t;
use rshm_gds::{part, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};

fn null_string() -> pmix_value_t {
    let mut c = zeroed_value();
    c.type_ = t::STRING;
    c.data.string = ptr::null_mut();
    c
}

#[test]
fn a_null_string_is_read_as_one() {
    let c = null_string();
    // SAFETY: a valid pmix_value_t.
    let v = unsafe { read_value(&c, 0) }.expect("a NULL string is a value");
    assert_eq!(v, Value::NullString);
    assert_eq!(v.type_code(), t::STRING);
}

#[test]
fn a_null_string_is_written_as_one() {
    let mut c = zeroed_value();
    write_value(&mut c, &Value::NullString).expect("write");
    assert_eq!(c.type_, t::STRING);
    // SAFETY: the STRING member is the live one.
    assert!(unsafe { c.data.string }.is_null());
}

#[test]
fn a_null_string_comes_back_from_the_store_as_a_null_string() {
    let c = null_string();
    // SAFETY: a valid pmix_value_t.
    let v = unsafe { read_value(&c, 0) }.expect("read");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tb = TableBuilder::new();
    tb.insert(Realm::Proc(0), "pmix.locstr", &v)
        .expect("insert");
    tb.insert(Realm::Proc(1), "pmix.locstr", &Value::String(String::new()))
        .expect("insert");
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(dir.path().to_owned()),
        sweep: false,
        ..StoreOptions::default()
    })
    .expect("store");
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &tb).expect("put");
    tx.commit().expect("commit");
    let r = Reader::attach(w.path()).expect("attach");
    let pin = r.pin();
    let got = r
        .get(&pin, "ns", part::DATA, Realm::Proc(0), "pmix.locstr")
        .expect("get");
    assert_eq!(got.to_value(), Value::NullString);
    let out = alloc_stored(&got).expect("client conversion");
    // SAFETY: alloc_stored returned a valid value; freed once below.
    unsafe {
        assert_eq!((*out).type_, t::STRING);
        assert!((*out).data.string.is_null());
        free_value(out);
    }
    // The empty string stays an empty string, not a NULL one.
    let empty = r
        .get(&pin, "ns", part::DATA, Realm::Proc(1), "pmix.locstr")
        .expect("get");
    let out = alloc_stored(&empty).expect("client conversion");
    // SAFETY: as above.
    unsafe {
        assert!(!(*out).data.string.is_null());
        assert_eq!(*(*out).data.string, 0);
        free_value(out);
    }
}
