//! A synthetic job's registration, as a host following the standard's 17.2.3.2 builds it: the
//! node and process maps in OpenPMIx's `pmix[...]` forms, job keys, one app array, one node array
//! per node and one proc array of 8 keys per rank. Used by the main job (`rshm demo`), the
//! benchmarks and the tests, so that all of them measure the same input.

#![forbid(unsafe_code)]

use crate::value::{Info, Value};

/// Hostname of node `n`.
pub fn host(n: u32) -> String {
    format!("node{n:05}")
}

/// The registration of a `ranks`-rank job, `ppn` ranks per node, nodes `host(0..)`, one app.
pub fn registration(ranks: u32, ppn: u32) -> Vec<Info> {
    let ppn = ppn.max(1);
    let mut v = registration_maps(ranks, ppn);
    v.reserve(ranks as usize);
    for r in 0..ranks {
        v.push(Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.appnum", Value::Uint32(0)),
                Info::new("pmix.apprank", Value::ProcRank(r)),
                Info::new("pmix.grank", Value::ProcRank(r)),
                Info::new("pmix.lrank", Value::Uint16((r % ppn) as u16)),
                Info::new("pmix.nrank", Value::Uint16((r % ppn) as u16)),
                Info::new("pmix.nodeid", Value::Uint32(r / ppn)),
                Info::new("pmix.hname", Value::String(host(r / ppn))),
            ],
        ));
    }
    v
}

/// The same job registered without its per-rank proc arrays: maps, job keys, the app array and
/// the node arrays. Local rank, node rank, node id and hostname are then derived from the maps;
/// the app keys of a rank (appnum, app rank, global rank) are not (docs/jobdata.md).
pub fn registration_maps(ranks: u32, ppn: u32) -> Vec<Info> {
    let ppn = ppn.max(1);
    let nodes = ranks.div_ceil(ppn).max(1);
    let per_node: Vec<String> = (0..nodes)
        .map(|n| {
            format!(
                "{}-{}",
                n * ppn,
                ((n + 1) * ppn).min(ranks).saturating_sub(1)
            )
        })
        .collect();
    let mut v = vec![
        Info::new(
            "pmix.nmap",
            Value::Regex(format!("pmix[node[5:0-{}]]", nodes - 1).into_bytes()),
        ),
        Info::new(
            "pmix.pmap",
            Value::Regex(format!("pmix[{}]", per_node.join(";")).into_bytes()),
        ),
        Info::new("pmix.univ.size", Value::Uint32(ranks)),
        Info::new("pmix.jobid", Value::String("synthetic@0".into())),
        Info::new("pmix.job.napps", Value::Uint32(1)),
        Info::array(
            "pmix.app.arr",
            vec![
                Info::new("pmix.appnum", Value::Uint32(0)),
                Info::new("pmix.app.size", Value::Uint32(ranks)),
                Info::new("pmix.aldr", Value::ProcRank(0)),
            ],
        ),
    ];
    for n in 0..nodes {
        v.push(Info::array(
            "pmix.node.arr",
            vec![
                Info::new("pmix.nodeid", Value::Uint32(n)),
                Info::new("pmix.hname", Value::String(host(n))),
                Info::new("pmix.node.size", Value::Uint32(ppn.min(ranks - n * ppn))),
            ],
        ));
    }
    v
}

/// What a PMIx_Get of the standard proc `key` of `rank` returns in that job.
pub fn proc_value(rank: u32, ppn: u32, key: &str) -> Option<Value> {
    let ppn = ppn.max(1);
    Some(match key {
        "pmix.lrank" | "pmix.nrank" => Value::Uint16((rank % ppn) as u16),
        "pmix.nodeid" => Value::Uint32(rank / ppn),
        "pmix.appnum" => Value::Uint32(0),
        "pmix.apprank" | "pmix.grank" => Value::ProcRank(rank),
        "pmix.hname" => Value::String(host(rank / ppn)),
        _ => return None,
    })
}
