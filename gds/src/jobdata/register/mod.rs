//! From a registration info array (what `PMIx_server_register_nspace` receives, assembled as the
//! standard's 17.2.3.2 describes) to a table: realms sorted out at write time, the keys a server
//! must answer derived from the node and process maps, the standard per-rank keys in proc
//! columns. docs/jobdata.md lists what is derived and what is stored where.
//!
//! [`build`] runs the steps, each in its module:
//! - `input`: what is read ([`RegInfo`], a Rust or C info array element);
//! - `scan`: pass 1, what must be known first (maps, session, nodes, job size);
//! - `read_ahead`: the proc arrays read on several threads, into the proc columns and a run;
//! - `derive`: the keys the maps alone give; `node_realm`: the node realm as one run;
//! - `apply`: pass 2, what the host registered, over what was derived.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::anlmap;
use super::keys::meta;
use super::query::RANK_VALID;
use crate::error::{try_vec, Error, Result};
use crate::layout::Realm;
use crate::prefault::Prefault;
use crate::table::TableBuilder;
use crate::value::Value;
use apply::Apply;
use derive::{default_appnum, derive, derive_columns};
use read_ahead::{read_ahead, Nodes, NO_GROUP, PROC_CLASS, READ_BLOCK};
use scan::ScanPlan;

mod apply;
mod derive;
mod input;
mod node_realm;
mod read_ahead;
mod scan;

pub use input::{
    number, text, text_of_bytes, Ahead, RegInfo, PREFETCH_ARRAY, PREFETCH_ELEMS, PREFETCH_INFO,
};

/// What the registration produced, beside the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSummary {
    /// Ranks in the job (PMIX_JOB_SIZE as registered, else counted from the maps).
    pub job_size: u32,
    /// Nodes named by the node map.
    pub nodes: u32,
    /// The store's own node, when the registration names `local_host`.
    pub local_nodeid: Option<u32>,
    /// The job's session id (0 when the registration gives none).
    pub session_id: u32,
}

fn bad(what: String) -> Error {
    Error::InvalidArgument(what)
}

/// Ranks the proc columns may cover beyond twice those the registration describes (mapped,
/// or with a proc array): a job's columns are dense when it is described, as it is in
/// practice, and a hostile size gets none (docs/jobdata.md "Limits").
const DENSE_SLACK: u64 = 4096;

/// Build the job-data table of a namespace from its registration info array. `local_host` is
/// the hostname of the store's node (the server's), which the job-realm "local" keys describe.
pub fn build<I: RegInfo>(
    local_host: Option<&str>,
    infos: &[I],
) -> Result<(TableBuilder, JobSummary)> {
    // At scale the calling thread would take most of the faults of the buffers below, while
    // the other cores wait for the read-ahead (docs/jobdata.md "How a registration is read").
    let prefault = if infos.len() > READ_BLOCK {
        Prefault::start()
    } else {
        Prefault::none()
    };
    let mut l = ScanPlan::new(infos.len());
    prefault.vec(&l.proc_arrays);
    l.scan_top(infos)?;
    let (hosts, per_node) = (&l.hosts, &l.per_node);
    if !per_node.is_empty() && !hosts.is_empty() && per_node.len() != hosts.len() {
        return Err(bad(format!(
            "the node map names {} nodes but the process map {}",
            hosts.len(),
            per_node.len()
        )));
    }
    // Below 2^24: the proc map's cap.
    let mapped = per_node.iter().map(Vec::len).sum::<usize>();
    let map_end = per_node.iter().flatten().max().map(|r| r + 1);
    let job_size = match l.registered_size {
        Some(n) if n > RANK_VALID => {
            return Err(bad(format!(
                "PMIX_JOB_SIZE {n} is past the valid ranks (below {RANK_VALID})"
            )))
        }
        Some(n) => n,
        None if mapped > 0 => mapped as u32,
        // Neither registered nor mapped: the proc arrays tell.
        None => l.proc_end()?.unwrap_or(0),
    };
    if let Some(end) = map_end.filter(|&e| e > job_size) {
        return Err(bad(format!(
            "the process map names rank {}, but the job has {job_size} ranks",
            end - 1
        )));
    }
    // The ranks the proc columns cover: the job's, unless the registration describes far
    // fewer (a bare PMIX_JOB_SIZE of 4e9, a few proc arrays of high ranks): then about the
    // ranks it does describe, and any others it names are entries (docs/jobdata.md "Limits").
    let described = (mapped as u64 + l.proc_arrays.len() as u64) * 2 + DENSE_SLACK;
    let described = job_size.min(u32::try_from(described).unwrap_or(u32::MAX));
    // A process map lists the job's ranks node by node: one whose ranks lie far past their
    // count describes a few far ranks of a vast job, each of which would cost an entry per
    // derived key (2^24 of them from a map of a kilobyte).
    if let Some(end) = map_end.filter(|&e| e > described) {
        return Err(bad(format!(
            "the process map names rank {}, far past the {mapped} ranks it maps",
            end - 1
        )));
    }
    // Without proc arrays only the maps' ranks have column values.
    let dense = match l.proc_arrays.is_empty() {
        true => map_end.unwrap_or(0),
        false => described,
    };

    let mut t = TableBuilder::with_ranks(dense);
    // The node realm and the hostname index go to a run of their own: per node its id,
    // hostname, sizes, leader and peers list (~7 bytes a rank), each padded to 16 bytes, then
    // the index (~34 bytes a node). (The entries inserted one by one are a few job keys.)
    let nodes = hosts.len().max(per_node.len()).max(l.node_arrays.len());
    let node_arena: Vec<u8> = try_vec(mapped * 8 + nodes * 128)?;
    prefault.vec(&node_arena);
    let mut node_of_rank = try_vec(dense as usize)?;
    prefault.vec(&node_of_rank);
    let session_id = l.session_id.unwrap_or(0);
    t.insert(Realm::Meta, meta::SESSION_ID, &Value::Uint32(session_id))?;

    // Node ids: the node map's order; node arrays may add nodes (by id, or by a new hostname).
    let mut node_ids: HashMap<String, u32> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.clone(), i as u32))
        .collect();
    // The hostnames node arrays give that the node map does not (another id, another name).
    let mut host_of_node: HashMap<u32, String> = HashMap::new();
    let mut next_id = hosts.len() as u32;
    for &(id, host) in &l.node_arrays {
        let Some(h) = host else { continue };
        let id = match id {
            Some(id) => id,
            None => *node_ids.entry(h.to_owned()).or_insert_with(|| {
                next_id += 1;
                next_id - 1
            }),
        };
        // At scale every node has an array repeating the map's name: nothing to add. (The
        // array's hostname is stored by pass 2, with the rest of the array.)
        if node_ids.get(h) != Some(&id) {
            node_ids.insert(h.to_owned(), id);
        }
        if hosts.get(id as usize).map(String::as_str) != Some(h) {
            host_of_node.insert(id, h.to_owned());
        } else {
            host_of_node.remove(&id);
        }
    }
    let local_nodeid = local_host.and_then(|h| node_ids.get(h).copied());

    node_of_rank.resize(dense as usize, u32::MAX);
    for (node, ranks) in per_node.iter().enumerate() {
        for &r in ranks {
            if let Some(slot) = node_of_rank.get_mut(r as usize) {
                *slot = node as u32;
            }
        }
    }
    // The PMI process mapping, once for all the job's clients, when the map places every rank.
    if mapped as u64 == u64::from(job_size) && map_end == Some(job_size) {
        if let Some(v) = node_of_rank
            .get(..job_size as usize)
            .and_then(|n| anlmap::vector(n, anlmap::MAX_LEN))
        {
            t.insert(Realm::Meta, anlmap::META_KEY, &Value::String(v))?;
        }
    }
    let mut dense_hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    for (&id, h) in &host_of_node {
        if let Some(slot) = dense_hosts.get_mut(id as usize) {
            *slot = h;
        }
    }
    // Top-level app keys go to the job's only app, as OpenPMIx files them (app 0 when no app
    // array names one; with several apps it refuses such a key, here it stays the job's).
    let only_app = match l.apps.split_first() {
        None => Some(0),
        Some((&first, rest)) => rest.iter().all(|&a| a == first).then_some(first),
    };
    let apply = Apply {
        session_id,
        job_size,
        local_node: local_nodeid,
        local_mapped: local_nodeid
            .and_then(|n| per_node.get(n as usize))
            .is_some_and(|r| !r.is_empty()),
        only_app,
        node_ids: &node_ids,
        nodes: Nodes {
            hosts: &dense_hosts,
            host_of_node: &host_of_node,
            node_of_rank: &node_of_rank,
        },
    };
    // The proc arrays are read on other threads meanwhile: they only write the proc realm, which
    // nothing else here writes but the derived columns, which they override (applied last).
    // Errors come in pass 2's order, the proc arrays' after the others'.
    // Not faulted in ahead: the reading threads fill them, on every core.
    let (mut cols, present) = t.take_columns(!l.proc_arrays.is_empty())?;
    let (ahead, done) = read_ahead(&l.proc_arrays, &apply.nodes, &mut cols, dense, || {
        if let Some(id) = local_nodeid {
            t.insert(Realm::Meta, meta::LOCAL_NODEID, &Value::Uint32(id))?;
        }
        derive(&mut t, hosts, per_node, job_size, local_nodeid)?;
        // What the host registered overrides what was derived.
        let mut node_arrays = Vec::with_capacity(l.node_arrays.len());
        for &(info, place) in &l.ops {
            apply.op(&mut t, info, place, &mut node_arrays)?;
        }
        // The node realm, and the hostname index (one meta value).
        let run = node_realm::node_run(hosts, per_node, node_arrays, &node_ids, node_arena)?;
        t.merge_run(run, NO_GROUP)?;
        Ok::<_, Error>(())
    });
    t.put_columns(cols, present | ahead.given);
    done?;
    // The maps' per-rank values where the proc arrays read ahead gave none (the arrays left to
    // the ordered walk below override them as well).
    derive_columns(&mut t, per_node)?;
    if ahead.mergeable(dense) {
        // One array per rank: the columns are stored, the extras go in as one run (other
        // keys than the columns', so their order does not matter).
        if ahead.extras.iter().any(|b| !b.entries.is_empty()) {
            t.merge_run(ahead.into_run(), PROC_CLASS..=PROC_CLASS)?;
        }
    } else {
        // In document order, one by one (a rank's later array overrides its earlier one).
        apply.in_order(&mut t, &l.proc_arrays, ahead, dense)?;
    }
    default_appnum(&mut t, &l.proc_arrays)?;
    let nodes = node_ids.len() as u32;
    Ok((
        t,
        JobSummary {
            job_size,
            nodes,
            local_nodeid,
            session_id,
        },
    ))
}
