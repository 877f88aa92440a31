//! A reader's table lookups in one generation: every (namespace, part) answers with its own
//! table, found or absent, however many a process asks (more than the reader's per-generation
//! lookup cache holds, names alike but for their end, asked repeatedly and in any order), and
//! a new generation's tables replace the old ones.

use rshm_gds::{part, Error, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};

const NAMESPACES: u32 = 48;
const PARTS: u32 = 40;

/// The value table (`ns`, `part`) holds in generation `gen`.
fn mark(ns: u32, part: u32, gen: u32) -> u32 {
    gen * 1_000_000 + ns * 1000 + part
}

fn publish(w: &mut Writer, gen: u32) {
    let mut tx = w.begin();
    for ns in 0..NAMESPACES {
        // Every other part absent: a lookup that misses is remembered too.
        for p in (0..PARTS).filter(|p| p % 2 == 0) {
            let mut t = TableBuilder::with_ranks(1);
            t.insert(Realm::Job, "mark", &Value::Uint32(mark(ns, p, gen)))
                .unwrap();
            tx.put_table(&format!("job-name@{ns}"), part::POSTED_RANKS + p, &t)
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn check_all(r: &Reader, gen: u32, order: &[(u32, u32)]) {
    let pin = r.pin();
    for &(ns, p) in order {
        let name = format!("job-name@{ns}");
        match r.table(&pin, &name, part::POSTED_RANKS + p) {
            Ok(t) => {
                assert_eq!(p % 2, 0, "{name} part {p} is not published");
                let v = t.get(Realm::Job, "mark").unwrap().to_value();
                assert_eq!(v, Value::Uint32(mark(ns, p, gen)), "{name} part {p}");
            }
            Err(Error::NotFound) => assert_eq!(p % 2, 1, "{name} part {p} is published"),
            Err(e) => panic!("{name} part {p}: {e}"),
        }
    }
}

#[test]
fn every_table_lookup_of_a_generation_answers_its_own_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(dir.path().to_path_buf()),
        ..StoreOptions::default()
    })
    .unwrap();
    publish(&mut w, 1);
    let r = Reader::attach(w.path()).unwrap();
    let mut order: Vec<(u32, u32)> = (0..NAMESPACES)
        .flat_map(|ns| (0..PARTS).map(move |p| (ns, p)))
        .collect();
    // In order, then shuffled (xorshift), twice each: first lookups and remembered ones.
    check_all(&r, 1, &order);
    check_all(&r, 1, &order);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    check_all(&r, 1, &order);
    check_all(&r, 1, &order);
    // A new generation: the same names answer with its tables.
    publish(&mut w, 2);
    check_all(&r, 2, &order);
    check_all(&r, 2, &order);
}
