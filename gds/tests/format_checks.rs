//! Checks of docs/format.md's reader rules that the corruption tests do not name one by one:
//! the header length, the entry classes a table may hold, and the alignment of the proc
//! columns. Each forges one field of a segment the writer made and expects a refusal.

use rshm_gds::layout::{Entry, Header, TableHeader, HEADER_LEN};
use rshm_gds::{check, Error, Realm, TableBuilder, Value};
use std::mem::offset_of;

/// A table segment with entries of several classes and two proc columns.
fn table_bytes() -> Vec<u8> {
    let mut t = TableBuilder::with_ranks(8);
    t.insert(Realm::Job, "pmix.job.size", &Value::Uint32(8))
        .unwrap();
    t.insert(Realm::Node(0), "pmix.hname", &Value::String("n0".into()))
        .unwrap();
    for r in 0..8 {
        t.insert(Realm::Proc(r), "pmix.lrank", &Value::Uint16(r as u16))
            .unwrap();
        t.insert(Realm::Proc(r), "pmix.grank", &Value::ProcRank(r))
            .unwrap();
    }
    check::encode_store("ns", &t).unwrap().0
}

fn read_u64(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

fn th(field: usize) -> usize {
    HEADER_LEN + field
}

#[test]
fn the_unforged_table_is_accepted() {
    assert!(check::table_bytes(&table_bytes(), &[]).unwrap() >= 2 + 16);
}

#[test]
fn a_header_length_other_than_64_is_refused() {
    let mut b = table_bytes();
    let at = offset_of!(Header, header_len);
    b[at..at + 4].copy_from_slice(&72u32.to_ne_bytes());
    assert!(matches!(
        check::table_bytes(&b, &[]),
        Err(Error::Corrupt("header length"))
    ));
}

#[test]
fn entry_classes_outside_1_to_9_are_refused() {
    let entries = read_u64(&table_bytes(), th(offset_of!(TableHeader, entries_off))) as usize;
    for class in [0u16, 10, 200, u16::MAX] {
        let mut b = table_bytes();
        let at = entries + offset_of!(Entry, class);
        b[at..at + 2].copy_from_slice(&class.to_ne_bytes());
        assert!(
            matches!(check::table_bytes(&b, &[]), Err(Error::Corrupt(_))),
            "class {class} accepted"
        );
    }
}

#[test]
fn posted_data_of_an_undefined_scope_is_not_written() {
    let mut t = TableBuilder::new();
    for scope in [0u8, 4, 250] {
        let r = t.insert(Realm::Posted { rank: 1, scope }, "k", &Value::Uint8(1));
        assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "scope {scope}: {r:?}"
        );
    }
    assert!(t.is_empty());
    for scope in 1..=3u8 {
        t.insert(Realm::Posted { rank: 1, scope }, "k", &Value::Uint8(scope))
            .unwrap();
    }
}

#[test]
fn a_misaligned_columns_offset_is_refused() {
    let good = table_bytes();
    let at = th(offset_of!(TableHeader, columns_off));
    let off = read_u64(&good, at);
    assert!(off.is_multiple_of(8));
    for forged in [off + 1, off - 7, off + 4] {
        let mut b = good.clone();
        b[at..at + 8].copy_from_slice(&forged.to_ne_bytes());
        assert!(
            matches!(check::table_bytes(&b, &[]), Err(Error::Corrupt(_))),
            "columns_off {forged} accepted"
        );
    }
}
