//! `rshm dump STORE | head`: a reader that closes the pipe early ends the listing quietly
//! (status 0, nothing on stderr), as `ls | head` shells expect, not with a panic.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use rshm_gds::{part, Realm, TableBuilder, Value};

#[test]
fn dump_into_a_pipe_closed_early_exits_quietly() {
    let (_base, mut w) = common::store("rshm-pipe-");
    // Far more listing than a pipe holds (64 KiB): the dump is still writing when the
    // reader goes.
    let mut t = TableBuilder::new();
    for r in 0..20_000 {
        t.insert(Realm::Proc(r), "test.key", &Value::Uint32(r))
            .unwrap();
    }
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_rshm"))
        .arg("dump")
        .arg(w.path())
        .args(["--ns", "ns", "--limit", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("store "), "{first:?}");
    drop(out);
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        done.status.success() && stderr.is_empty(),
        "rshm dump into a closed pipe: {}, stderr {stderr:?}",
        done.status
    );
}
