// A value is used after its pin is dropped: the store may then retire the generation that
// maps it, so this must not compile.
fn main() {
    let r = rshm_gds::Reader::attach(std::path::Path::new("/nonexistent")).unwrap();
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k")
        .unwrap();
    drop(pin);
    println!("{v:?}");
}
