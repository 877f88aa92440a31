//! Shared fixtures of the benchmarks (benches/benches/) and profiling examples.

use gds::value::types;
use gds::{Info, Value};

fn info(key: &str, value: Value) -> Info {
    Info {
        key: key.into(),
        flags: 0,
        value,
    }
}

fn info_array(key: &str, items: Vec<Info>) -> Info {
    let items = items
        .into_iter()
        .map(|i| Value::Info(Box::new(i)))
        .collect();
    info(key, Value::array(types::INFO, items))
}

/// Hostname of node `n` of the synthetic jobs.
pub fn host(n: u32) -> String {
    format!("node{n:05}")
}

/// The registration info array a host builds for a `ranks`-rank job with `ppn` ranks per node
/// (PMIx standard 17.2.3.2): OpenPMIx-form maps, job keys, one array per node and per rank.
pub fn registration(ranks: u32, ppn: u32) -> Vec<Info> {
    let nodes = ranks.div_ceil(ppn);
    let per_node: Vec<String> = (0..nodes)
        .map(|n| format!("{}-{}", n * ppn, ((n + 1) * ppn).min(ranks) - 1))
        .collect();
    let mut v = vec![
        info(
            "pmix.nmap",
            Value::Regex(format!("pmix[node[5:0-{}]]", nodes - 1).into_bytes()),
        ),
        info(
            "pmix.pmap",
            Value::Regex(format!("pmix[{}]", per_node.join(";")).into_bytes()),
        ),
        info("pmix.univ.size", Value::Uint32(ranks)),
        info("pmix.jobid", Value::String("bench@0".into())),
        info("pmix.job.napps", Value::Uint32(1)),
    ];
    v.push(info_array(
        "pmix.app.arr",
        vec![
            info("pmix.appnum", Value::Uint32(0)),
            info("pmix.app.size", Value::Uint32(ranks)),
        ],
    ));
    for n in 0..nodes {
        v.push(info_array(
            "pmix.node.arr",
            vec![
                info("pmix.nodeid", Value::Uint32(n)),
                info("pmix.hname", Value::String(host(n))),
            ],
        ));
    }
    for r in 0..ranks {
        v.push(info_array(
            "pmix.pdata",
            vec![
                info("pmix.rank", Value::ProcRank(r)),
                info("pmix.appnum", Value::Uint32(0)),
                info("pmix.apprank", Value::ProcRank(r)),
                info("pmix.grank", Value::ProcRank(r)),
                info("pmix.lrank", Value::Uint16((r % ppn) as u16)),
                info("pmix.nrank", Value::Uint16((r % ppn) as u16)),
                info("pmix.nodeid", Value::Uint32(r / ppn)),
                info("pmix.hname", Value::String(host(r / ppn))),
            ],
        ));
    }
    v
}
