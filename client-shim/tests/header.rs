//! The committed C header is what cbindgen generates from the exports today.

#[test]
fn committed_header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config =
        cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen")
        .write(&mut generated);
    let path = format!("{dir}/include/rshm_client.h");
    if std::env::var_os("RSHM_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write header");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{path} is stale: regenerate with RSHM_BLESS=1 cargo test -p rshm-client --test header"
    );
}
