//! The commit storm's fixture, shared by the scale harness's `--commit-storm` mode and
//! `benches/commit.rs`: a server holding an N-rank local job (plus N remote ranks for a fence),
//! and the K values one rank commits.

use rshm_gds::jobdata::synthetic::{host, registration};
use rshm_gds::modex::Scope;
use rshm_gds::Value;
use rshm_server::{PostedData, PostedValue, Server, ServerOptions};
use std::path::PathBuf;

/// The namespace of the storm's job.
pub const NSPACE: &str = "storm";

/// A server on `base` (default: gds's default base directory) with a `2n`-rank job registered:
/// ranks `0..n` on this node (the committing clients), `n..2n` on a second node (whose data
/// only a fence brings).
pub fn server(n: u32, base: Option<PathBuf>) -> Server {
    let mut s = Server::open(ServerOptions {
        base_dir: base,
        local_host: Some(host(0)),
        ..ServerOptions::default()
    })
    .expect("open the server's store");
    let reg = registration(2 * n, n);
    s.register_nspace(NSPACE, n as i32, &reg)
        .expect("register the storm's job");
    s
}

/// Key `i` of a commit.
pub fn key(i: u32) -> String {
    format!("storm.key.{i}")
}

/// What `rank` commits: `k` byte objects of `bytes` each (content differs per rank, key and
/// `round`, so a re-commit is a change), in `scope`.
pub fn commit(rank: u32, k: u32, bytes: usize, round: u8, scope: Scope) -> Vec<PostedValue> {
    (0..k)
        .map(|i| PostedValue {
            nspace: NSPACE.to_owned(),
            rank,
            scope: scope as u8,
            key: key(i),
            value: Value::ByteObject(vec![(rank as u8) ^ (i as u8) ^ round; bytes]),
        })
        .collect()
}

/// Publish one client's commit as the gds component hands it to the server
/// (`rshm_server_commit`: the process's values in one call, one generation).
pub fn publish(s: &mut Server, values: &[PostedValue]) {
    let Some(first) = values.first() else {
        return;
    };
    let refs: Vec<(u8, &str, PostedData<'_>)> = values
        .iter()
        .map(|v| (v.scope, v.key.as_str(), PostedData::Value(&v.value)))
        .collect();
    s.commit(&first.nspace, first.rank, &refs)
        .map_err(|u| u.error)
        .expect("commit");
}

/// Key and value bytes of a commit: what its client handed over.
pub fn committed_bytes(values: &[PostedValue]) -> u64 {
    values
        .iter()
        .map(|v| {
            let n = match &v.value {
                Value::ByteObject(b) => b.len(),
                Value::String(s) => s.len(),
                _ => 0,
            };
            (v.key.len() + n) as u64
        })
        .sum()
}
