// A value read through a reader is used after the reader is dropped: dropping the reader
// unmaps the value's bytes, so this must not compile.
fn main() {
    let r = rshm_gds::Reader::attach(std::path::Path::new("/nonexistent")).unwrap();
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k")
        .unwrap();
    drop(r);
    println!("{v:?}");
}
