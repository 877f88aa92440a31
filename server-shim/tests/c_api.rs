//! The C APIs from C (tests/c_api/): a C server (`server.c`) registers a job from `pmix_info_t`
//! arrays built with the standard's macros (every realm, node and process maps, a job key of
//! every value type the abi converts), registers resources, stores committed and fenced posted
//! data, and starts a C client (`client.c`) for two local ranks with the environment of
//! `rshm_server_setup_fork`; each client reads every realm and every value type back in the
//! three return modes of PMIx_Get, compares them with values it builds itself with
//! `PMIX_VALUE_LOAD` from the shared definitions (`common.c`), releases them with libpmix's
//! `PMIX_VALUE_RELEASE` / `PMIX_VALUE_DESTRUCT`, and checks the statuses of absent data, scope
//! rules and bad arguments. Both are compiled with `-std=c11 -Wall -Wextra -Werror -pedantic`.
//!
//! `RSHM_C_API_VALGRIND=1` runs the server and the clients under valgrind (invalid accesses
//! and definite leaks fail the test).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("workspace root")
}

/// Where cargo puts the debug cdylibs: `$CARGO_TARGET_DIR` (relative to the workspace, where
/// cargo runs) or `<workspace>/target`.
fn lib_dir(root: &Path) -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
        Some(d) => root.join(d),
        None => root.join("target"),
    };
    target.join("debug")
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The counts of the line `<who> summary: N checks, P passed, F failed`.
fn summary(output: &str, who: &str) -> Option<(u32, u32, u32)> {
    let line = output
        .lines()
        .find(|l| l.starts_with(who) && l.contains(" summary: "))?;
    let nums: Vec<u32> = line
        .split(" summary: ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    match nums[..] {
        [n, p, f] => Some((n, p, f)),
        _ => None,
    }
}

#[test]
fn c_server_registers_a_job_and_c_clients_read_every_realm_and_type() {
    let root = workspace();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let build = Command::new(&cargo)
        .current_dir(&root)
        .args(["build", "-p", "rshm-server", "-p", "rshm-client", "--lib"])
        .output()
        .expect("run cargo build");
    assert!(
        build.status.success(),
        "cargo build of the cdylibs failed:\n{}",
        text(&build)
    );
    let libdir = lib_dir(&root);
    for lib in ["librshm_server.so", "librshm_client.so"] {
        assert!(
            libdir.join(lib).is_file(),
            "{lib} not found in {}",
            libdir.display()
        );
    }

    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("build");
    let stores = tmp.path().join("stores");
    std::fs::create_dir_all(&stores).expect("mkdir stores");
    let make = Command::new("make")
        .arg("-C")
        .arg(root.join("server-shim/tests/c_api"))
        .arg(format!("LIBDIR={}", libdir.display()))
        .arg(format!("OUT={}", out.display()))
        .output()
        .expect("run make");
    assert!(
        make.status.success(),
        "building the C tests failed:\n{}",
        text(&make)
    );

    let valgrind = std::env::var_os("RSHM_C_API_VALGRIND").is_some_and(|v| v != "0");
    let vg = [
        "-q",
        "--error-exitcode=9",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite",
    ];
    let client = if valgrind {
        let wrapper = tmp.path().join("client.sh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec valgrind {} {} \"$@\"\n",
                vg.join(" "),
                out.join("client").display()
            ),
        )
        .expect("write the valgrind wrapper");
        let mut perm = std::fs::metadata(&wrapper).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&wrapper, perm).expect("chmod");
        wrapper
    } else {
        out.join("client")
    };
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args(vg).arg(out.join("server"));
        c
    } else {
        Command::new(out.join("server"))
    };
    let run = cmd
        .arg(&client)
        .arg(&stores)
        .env("TMPDIR", &stores)
        .output()
        .expect("run the C server");
    let output = text(&run);
    assert!(
        run.status.success(),
        "the C test failed ({}):\n{output}",
        run.status
    );
    // Not vacuous: the server and both clients ran their checks and reported no failure.
    for (who, at_least) in [("[server]", 40), ("[client 0]", 800), ("[client 6]", 800)] {
        let (n, passed, failed) =
            summary(&output, who).unwrap_or_else(|| panic!("no summary line of {who}:\n{output}"));
        assert!(
            failed == 0 && passed == n && n >= at_least,
            "{who}: {n} checks, {passed} passed, {failed} failed (expected >= {at_least}):\n{output}"
        );
    }
    // The store was removed by rshm_server_close.
    let left: Vec<_> = std::fs::read_dir(&stores)
        .expect("read stores dir")
        .collect();
    assert!(left.is_empty(), "files left after close: {left:?}");
    println!(
        "{}",
        output
            .lines()
            .filter(|l| l.contains("summary:"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
