// A value is used after its pin is dropped: the store may then retire the generation that
// maps it, so this must not compile.
fn main() {
    let r = gds::Reader::attach(std::path::Path::new("/nonexistent")).unwrap();
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", gds::part::DATA, gds::Realm::Job, "k")
        .unwrap();
    drop(pin);
    println!("{v:?}");
}
