//! The command line: `--help` on the command and on every subcommand, errors with status 2, and
//! the test helpers absent from the admin command.

use std::process::Command;

use clap::CommandFactory;

/// clap's own consistency checks of the definition (names, conflicts, defaults).
#[test]
fn the_command_definition_passes_claps_checks() {
    rshm_cli::Cli::command().debug_assert();
}

fn rshm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rshm"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_on_the_command_and_every_subcommand_names_its_usage() {
    let top = rshm(&["--help"]);
    assert!(top.status.success());
    let text = String::from_utf8_lossy(&top.stdout);
    for sub in ["demo", "dump", "get", "sweep"] {
        assert!(text.contains(sub), "rshm --help lists {sub}: {text}");
        let out = rshm(&[sub, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "rshm {sub} --help: {out:?}");
        assert!(
            help.contains(&format!("Usage: rshm {sub}")),
            "rshm {sub} --help: {help}"
        );
    }
    assert!(String::from_utf8_lossy(&rshm(&["dump", "--help"]).stdout).contains("--limit"));
    assert!(rshm(&["help", "demo"]).status.success());
}

#[test]
fn a_bad_option_or_a_missing_argument_exits_2_pointing_to_the_help() {
    for args in [
        &["dump", "--nope", "x"][..],
        &["get", "store", "ns"],
        &["demo", "--ranks", "many"],
        &[],
    ] {
        let out = rshm(args);
        assert_eq!(out.status.code(), Some(2), "rshm {args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--help"),
            "rshm {args:?}: {out:?}"
        );
    }
}

#[test]
fn the_test_helpers_are_not_subcommands_of_the_admin_command() {
    for sub in ["hold", "write-loop", "read-loop"] {
        let out = rshm(&[sub, "--help"]);
        assert_eq!(out.status.code(), Some(2), "rshm {sub}: {out:?}");
    }
}
