//! Building what the preload tests run: the server, preload and direct client libraries
//! (cargo, the test's own profile) and the gds component (component/Makefile, release).
//! Included by path next to `pmixhost` (`super::pmixhost`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use super::pmixhost;

/// Build the server library and the preload library; return their paths.
pub fn libraries() -> (PathBuf, PathBuf) {
    let (server, preload, _) = libraries_and_client();
    (server, preload)
}

/// [`libraries`], and the direct client library (`librshm_client.so`).
pub fn libraries_and_client() -> (PathBuf, PathBuf, PathBuf) {
    let root = pmixhost::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "-q",
            "-p",
            "rshm-server",
            "-p",
            "rshm-client-preload",
            "-p",
            "rshm-client",
            "-p",
            "rshm-server-preload",
            "--lib",
        ])
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the shims failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"));
    let dir = target.join("debug");
    (
        dir.join("librshm_server.so"),
        dir.join("librshm_client_preload.so"),
        dir.join("librshm_client.so"),
    )
}

/// `librshm_server_preload.so`, built by [`libraries`] beside the others.
pub fn server_preload() -> PathBuf {
    libraries().0.with_file_name("librshm_server_preload.so")
}

/// Build `pmix_mca_gds_rshm.so` (component/Makefile, release profile) and return its directory.
pub fn component_dir() -> PathBuf {
    let root = pmixhost::repo_root();
    let out = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
        .join("release")
        .join("gds-component-preload-test");
    pmixhost::make_locked(
        pmixhost::COMPONENT_BUILD_LOCK,
        &root.join("component"),
        &[format!("OUT={}", out.display())],
    );
    out
}
