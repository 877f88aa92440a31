//! Where things are (the repository, cargo's target directory) and building what the harness
//! runs: tools/pmix-host and its client, the shims, the gds component.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run::Tools;

pub fn repo_root() -> PathBuf {
    let mut d = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !d.join("tools").join("pmix-host").is_dir() {
        assert!(d.pop(), "no tools/pmix-host above the benches crate");
    }
    d
}

pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
}

/// Build pmix-host/pmix-client, the three shims and the gds component. Err: why the harness
/// cannot run.
pub fn build(root: &Path, component: Option<PathBuf>) -> Result<(Tools, Vec<String>), String> {
    let tool_dir = root.join("tools").join("pmix-host");
    let out = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&tool_dir)
        .output()
        .map_err(|e| format!("make: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pmix-host does not build (is libpmix-dev installed?):\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(root)
        .args(["build", "-q", "--release", "--lib"])
        .args([
            "-p",
            "server-shim",
            "-p",
            "client-shim",
            "-p",
            "rshm-preload",
        ])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !st.success() {
        return Err("building the shims failed".into());
    }
    let rel = target_dir(root).join("release");
    let mut notes = Vec::new();
    // Build the gds component unless one was given (so the column never runs a stale one);
    // a machine without OpenPMIx's internal headers skips that column.
    if component.is_none() && std::env::var_os("RSHM_GDS_COMPONENT").is_none() {
        let ok = Command::new("make")
            .args(["-s", "-C"])
            .arg(root.join("component"))
            .stdout(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            notes.push("make -C component failed: the component columns are skipped".into());
        }
    }
    let so = component
        .or_else(|| std::env::var_os("RSHM_GDS_COMPONENT").map(PathBuf::from))
        .unwrap_or_else(|| rel.join("gds-component").join("pmix_mca_gds_rshm.so"));
    let so = if so.is_dir() {
        so.join("pmix_mca_gds_rshm.so")
    } else {
        so
    };
    let component_dir = if so.is_file() {
        notes.push(format!("gds component: {}", so.display()));
        so.parent().map(Path::to_path_buf)
    } else {
        notes.push(format!(
            "rshm-component skipped: {} not found (component/ has not produced it: make -C component)",
            so.display()
        ));
        None
    };
    Ok((
        Tools {
            tool_dir,
            server_so: rel.join("librshm_server.so"),
            client_so: rel.join("librshm_client.so"),
            preload_so: rel.join("librshm_preload.so"),
            component_dir,
        },
        notes,
    ))
}
