// The programs of compile-fail/ without their early drop: these compile, so what fails there
// is the drop alone.
fn value(r: rshm_gds::Reader) {
    let pin = r.pin();
    if let Ok(v) = r.get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k") {
        println!("{v:?}");
    }
    if let Ok(t) = r.table(&pin, "ns", rshm_gds::part::DATA) {
        println!("{}", t.mapped_len());
    }
    drop(pin);
    drop(r);
}

fn main() {
    let _ = value;
}
