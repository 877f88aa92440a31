//! The hwloc release this crate builds against (`pkg-config --modversion hwloc`): libpmix names
//! its topologies' source `hwloc:<release>` (its build's HWLOC_VERSION), and so does the
//! interposed `PMIx_Load_topology`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = std::process::Command::new("pkg-config")
        .args(["--modversion", "hwloc"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=RSHM_HWLOC_RELEASE={version}");
}
