//! A fixed loop of hot gets, for instruction-level profiling:
//! `valgrind --tool=callgrind target/release/examples/hotget`.
use rshm_gds::{part, Reader, Realm, TableBuilder, Value};

fn main() {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "pmix.job.size", &Value::Uint32(8))
        .unwrap();
    for r in 0..1000 {
        t.insert(Realm::Proc(r), "pmix.lrank", &Value::Uint16(r as u16))
            .unwrap();
    }
    let w = rshm_benches::publish("bench", &t);
    let r = Reader::attach(w.path()).unwrap();
    let mut sum = 0u64;
    for _ in 0..100_000 {
        let pin = r.pin();
        let v = r
            .get(
                &pin,
                "bench",
                part::DATA,
                Realm::Job,
                std::hint::black_box("pmix.job.size"),
            )
            .unwrap();
        sum += v.as_u64().unwrap();
    }
    println!("{sum}");
}
