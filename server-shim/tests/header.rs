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
    let path = format!("{dir}/include/rshm_server.h");
    if std::env::var_os("RSHM_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write header");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{path} is stale: regenerate with RSHM_BLESS=1 cargo test -p rshm-server --test header"
    );
}

/// The header spells `rshm_server_open`'s info key (cbindgen.toml: cbindgen writes no string
/// constants) as abi names it.
#[test]
fn the_header_s_info_key_is_abi_s() {
    let header = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/include/rshm_server.h"
    ))
    .expect("header");
    let define = format!(
        "#define RSHM_SERVER_INFO_DIR \"{}\"\n",
        rshm_abi::env::INFO_DIR
    );
    assert!(header.contains(&define), "no {define:?} in the header");
}
