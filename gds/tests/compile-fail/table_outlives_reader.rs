// A mapped table borrowed through a reader is used after the reader is dropped.
fn main() {
    let r = rshm_gds::Reader::attach(std::path::Path::new("/nonexistent")).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "ns", rshm_gds::part::DATA).unwrap();
    drop(r);
    println!("{}", t.mapped_len());
}
