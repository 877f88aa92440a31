//! The installed C libraries work through their pkg-config files alone: scripts/install-shims.sh
//! installs a debug build into a temporary prefix, and a C program found only through
//! `pkg-config --cflags --libs rshm-server rshm-client` is compiled (-std=c11 -Wall -Wextra
//! -Werror -pedantic) and run.

use std::path::Path;
use std::process::Command;

#[test]
fn installed_libraries_build_and_run_through_pkg_config() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let prefix = tempfile::tempdir().expect("tempdir");
    let st = Command::new("bash")
        .arg(root.join("scripts/install-shims.sh"))
        .arg(prefix.path())
        .env("PROFILE", "debug")
        .status()
        .expect("install-shims.sh");
    assert!(st.success(), "install-shims.sh failed");
    let pcdir = prefix.path().join("lib/pkgconfig");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "rshm-server", "rshm-client"])
        .env("PKG_CONFIG_PATH", &pcdir)
        .output()
        .expect("pkg-config");
    assert!(
        flags.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags = String::from_utf8(flags.stdout).expect("utf8");
    let exe = prefix.path().join("smoke");
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o"])
        .arg(&exe)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pkgconfig/smoke.c"))
        .args(flags.split_whitespace())
        .arg(format!(
            "-Wl,-rpath,{}",
            prefix.path().join("lib").display()
        ))
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe)
        .env("TMPDIR", prefix.path())
        .output()
        .expect("run smoke");
    assert!(
        run.status.success(),
        "smoke: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}
