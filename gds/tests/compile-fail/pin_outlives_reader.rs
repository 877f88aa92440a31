// A pin belongs to its reader: the reader cannot be dropped while one is out.
fn main() {
    let r = rshm_gds::Reader::attach(std::path::Path::new("/nonexistent")).unwrap();
    let pin = r.pin();
    drop(r);
    drop(pin);
}
