//! Link Debian's libpmix (pkg-config `pmix`): the library is a PMIx client, and its rpath finds
//! libpmix where pkg-config says it lives (Debian keeps it out of the default search path).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let libdir = std::process::Command::new("pkg-config")
        .args(["--variable=libdir", "pmix"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/usr/lib/x86_64-linux-gnu/pmix2/lib".to_owned());
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=pmix");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
}
