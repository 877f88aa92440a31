//! From a registration info array (what `PMIx_server_register_nspace` receives, assembled as the
//! standard's 17.2.3.2 describes) to a table: realms sorted out at write time, the keys a server
//! must answer derived from the node and process maps, the standard per-rank keys in proc
//! columns. docs/jobdata.md lists what is derived and what is stored where.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};

use super::keys::{self, default_realm, meta, DefaultRealm};
use super::maps::{parse_node_map, parse_proc_map};
use crate::error::{Error, Result};
use crate::layout::Realm;
use crate::table::TableBuilder;
use crate::value::{types, Info, Value};

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

/// A node array: (node id if given, hostname if given, its other pairs).
type NodeArray = (Option<u32>, Option<String>, Vec<(String, Value)>);

/// Realm-sorted key/value pairs gathered from the arrays, before derivation.
#[derive(Default)]
struct Gathered {
    session_id: Option<u32>,
    session: Vec<(String, Value)>,
    job: Vec<(String, Value)>,
    apps: BTreeMap<u32, Vec<(String, Value)>>,
    nodes: Vec<NodeArray>,
    procs: Vec<(u32, Vec<(String, Value)>)>,
    node_map: Option<Vec<String>>,
    proc_map: Option<Vec<Vec<u32>>>,
}

fn bad(what: String) -> Error {
    Error::InvalidArgument(what)
}

/// The string of a string-like value (maps arrive as PMIX_STRING or PMIX_REGEX bytes).
fn text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Regex(b) | Value::ByteObject(b) => {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            std::str::from_utf8(&b[..end]).ok()
        }
        _ => None,
    }
}

/// A non-negative integer value that fits a u32 (ids and ranks arrive with varying types).
fn number(v: &Value) -> Option<u32> {
    let n: i128 = match *v {
        Value::Uint32(n) | Value::Uint(n) | Value::ProcRank(n) => n as i128,
        Value::Uint16(n) => n as i128,
        Value::Uint8(n) => n as i128,
        Value::Uint64(n) | Value::Size(n) => n as i128,
        Value::Int(n) | Value::Int32(n) => n as i128,
        Value::Int64(n) => n as i128,
        Value::Int16(n) => n as i128,
        _ => return None,
    };
    u32::try_from(n).ok()
}

/// The info elements of an info-array value.
fn infos_of<'a>(key: &str, v: &'a Value) -> Result<impl Iterator<Item = &'a Info>> {
    match v {
        Value::DataArray(a) if a.elem_type == types::INFO => {
            Ok(a.items.iter().filter_map(|i| match i {
                Value::Info(info) => Some(&**info),
                _ => None,
            }))
        }
        _ => Err(bad(format!("{key} must be an array of pmix_info_t"))),
    }
}

impl Gathered {
    /// Top level, or the inside of a job or session array (`session` true).
    fn walk(&mut self, infos: &[&Info], session: bool) -> Result<()> {
        for info in infos {
            let (key, v) = (info.key.as_str(), &info.value);
            match key {
                keys::SESSION_INFO_ARRAY => {
                    let inner: Vec<&Info> = infos_of(key, v)?.collect();
                    self.walk(&inner, true)?;
                }
                keys::JOB_INFO_ARRAY => {
                    let inner: Vec<&Info> = infos_of(key, v)?.collect();
                    self.walk(&inner, false)?;
                }
                keys::APP_INFO_ARRAY => {
                    let mut appnum = None;
                    let mut pairs = Vec::new();
                    for i in infos_of(key, v)? {
                        if i.key == keys::APPNUM {
                            appnum = Some(
                                number(&i.value)
                                    .ok_or_else(|| bad("PMIX_APPNUM must be a number".into()))?,
                            );
                        }
                        pairs.push((i.key.clone(), i.value.clone()));
                    }
                    let n = appnum.ok_or_else(|| bad("an app array without PMIX_APPNUM".into()))?;
                    self.apps.entry(n).or_default().extend(pairs);
                }
                keys::NODE_INFO_ARRAY => {
                    let (mut id, mut host, mut pairs) = (None, None, Vec::new());
                    for i in infos_of(key, v)? {
                        match i.key.as_str() {
                            keys::NODEID => {
                                id =
                                    Some(number(&i.value).ok_or_else(|| {
                                        bad("PMIX_NODEID must be a number".into())
                                    })?)
                            }
                            keys::HOSTNAME => {
                                host = Some(
                                    text(&i.value)
                                        .ok_or_else(
                                            || bad("PMIX_HOSTNAME must be a string".into()),
                                        )?
                                        .to_owned(),
                                )
                            }
                            _ => pairs.push((i.key.clone(), i.value.clone())),
                        }
                    }
                    if id.is_none() && host.is_none() {
                        return Err(bad(
                            "a node array without PMIX_NODEID or PMIX_HOSTNAME".into()
                        ));
                    }
                    self.nodes.push((id, host, pairs));
                }
                keys::PROC_INFO_ARRAY => {
                    let mut rank = None;
                    let mut pairs = Vec::new();
                    for i in infos_of(key, v)? {
                        if i.key == keys::RANK {
                            rank = Some(
                                number(&i.value)
                                    .ok_or_else(|| bad("PMIX_RANK must be a rank".into()))?,
                            );
                        } else {
                            pairs.push((i.key.clone(), i.value.clone()));
                        }
                    }
                    let r = rank.ok_or_else(|| bad("a proc array without PMIX_RANK".into()))?;
                    self.procs.push((r, pairs));
                }
                keys::NODE_MAP | keys::NODE_MAP_RAW => {
                    let s = text(v).ok_or_else(|| bad(format!("{key} must be a string")))?;
                    self.node_map = Some(parse_node_map(s)?);
                }
                keys::PROC_MAP | keys::PROC_MAP_RAW => {
                    let s = text(v).ok_or_else(|| bad(format!("{key} must be a string")))?;
                    self.proc_map = Some(parse_proc_map(s)?);
                }
                keys::SESSION_ID if session || self.session_id.is_none() => {
                    self.session_id = Some(
                        number(v).ok_or_else(|| bad("PMIX_SESSION_ID must be a number".into()))?,
                    );
                }
                _ if session || default_realm(key) == DefaultRealm::Session => {
                    self.session.push((key.to_owned(), v.clone()));
                }
                _ => self.job.push((key.to_owned(), v.clone())),
            }
        }
        Ok(())
    }
}

/// Build the job-data table of a namespace from its registration info array. `local_host` is
/// the hostname of the store's node (the server's), which the job-realm "local" keys describe.
pub fn build(local_host: Option<&str>, infos: &[Info]) -> Result<(TableBuilder, JobSummary)> {
    let mut g = Gathered::default();
    let top: Vec<&Info> = infos.iter().collect();
    g.walk(&top, false)?;

    let hosts: Vec<String> = g.node_map.take().unwrap_or_default();
    let per_node: Vec<Vec<u32>> = g.proc_map.take().unwrap_or_default();
    if !per_node.is_empty() && !hosts.is_empty() && per_node.len() != hosts.len() {
        return Err(bad(format!(
            "the node map names {} nodes but the process map {}",
            hosts.len(),
            per_node.len()
        )));
    }
    let mapped: u64 = per_node.iter().map(|n| n.len() as u64).sum();
    let registered_size = g
        .job
        .iter()
        .find(|(k, _)| k == keys::JOB_SIZE)
        .and_then(|(_, v)| number(v));
    let max_rank = per_node
        .iter()
        .flatten()
        .chain(g.procs.iter().map(|(r, _)| r))
        .max()
        .map(|r| r + 1);
    let job_size = registered_size
        .or(u32::try_from(mapped).ok().filter(|&m| m > 0))
        .or(max_rank)
        .unwrap_or(0);

    let mut t = TableBuilder::with_ranks(job_size);
    let session_id = g.session_id.unwrap_or(0);
    t.insert(Realm::Meta, meta::SESSION_ID, &Value::Uint32(session_id))?;

    // Node ids: map order; node arrays may name more nodes (by id, or by a new hostname).
    let mut node_ids: HashMap<String, u32> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.clone(), i as u32))
        .collect();
    let mut next_id = hosts.len() as u32;
    let mut node_arrays = Vec::with_capacity(g.nodes.len());
    for (id, host, pairs) in std::mem::take(&mut g.nodes) {
        let id = match (id, &host) {
            (Some(id), _) => id,
            (None, Some(h)) => *node_ids.entry(h.clone()).or_insert_with(|| {
                next_id += 1;
                next_id - 1
            }),
            (None, None) => unreachable!("checked in walk"),
        };
        if let Some(h) = &host {
            node_ids.insert(h.clone(), id);
        }
        node_arrays.push((id, host, pairs));
    }
    for (h, &id) in &node_ids {
        t.insert(
            Realm::Meta,
            &format!("{}{h}", meta::NODE_BY_NAME),
            &Value::Uint32(id),
        )?;
    }
    let local_nodeid = local_host.and_then(|h| node_ids.get(h).copied());
    if let Some(id) = local_nodeid {
        t.insert(Realm::Meta, meta::LOCAL_NODEID, &Value::Uint32(id))?;
    }

    // Derived from the maps (what OpenPMIx 4.2.2 answers from the maps alone).
    if !hosts.is_empty() || !per_node.is_empty() {
        t.insert(Realm::Job, keys::JOB_SIZE, &Value::Uint32(job_size))?;
        t.insert(Realm::Job, keys::MAX_PROCS, &Value::Uint32(job_size))?;
        t.insert(
            Realm::Job,
            keys::NUM_NODES,
            &Value::Uint32(hosts.len().max(per_node.len()) as u32),
        )?;
    }
    if !hosts.is_empty() {
        t.insert(Realm::Job, keys::NODE_LIST, &Value::String(hosts.join(",")))?;
    }
    for (i, host) in hosts.iter().enumerate() {
        t.insert(
            Realm::Node(i as u32),
            keys::HOSTNAME,
            &Value::String(host.clone()),
        )?;
        t.insert(
            Realm::Node(i as u32),
            keys::NODEID,
            &Value::Uint32(i as u32),
        )?;
    }
    for (i, ranks) in per_node.iter().enumerate() {
        let node = i as u32;
        let mut sorted = ranks.clone();
        sorted.sort_unstable();
        for (local, &r) in sorted.iter().enumerate() {
            let local =
                u16::try_from(local).map_err(|_| bad("more than 65535 ranks on a node".into()))?;
            t.insert(Realm::Proc(r), keys::LOCAL_RANK, &Value::Uint16(local))?;
            t.insert(Realm::Proc(r), keys::NODE_RANK, &Value::Uint16(local))?;
            t.insert(Realm::Proc(r), keys::NODEID, &Value::Uint32(node))?;
        }
        let Some(&leader) = sorted.first() else {
            continue;
        };
        let peers = Value::String(
            sorted
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
        );
        let size = Value::Uint32(sorted.len() as u32);
        t.insert(Realm::Node(node), keys::LOCAL_SIZE, &size)?;
        t.insert(Realm::Node(node), keys::LOCALLDR, &Value::ProcRank(leader))?;
        t.insert(Realm::Node(node), keys::LOCAL_PEERS, &peers)?;
        if local_nodeid == Some(node) {
            t.insert(Realm::Job, keys::LOCAL_SIZE, &size)?;
            t.insert(Realm::Job, keys::LOCALLDR, &Value::ProcRank(leader))?;
            t.insert(Realm::Job, keys::LOCAL_PEERS, &peers)?;
        }
    }

    // What the host registered overrides what was derived.
    for (k, v) in &g.session {
        t.insert(Realm::Session(session_id), k, v)?;
    }
    for (k, v) in &g.job {
        t.insert(Realm::Job, k, v)?;
    }
    for (n, pairs) in &g.apps {
        for (k, v) in pairs {
            t.insert(Realm::App(*n), k, v)?;
        }
    }
    for (id, host, pairs) in &node_arrays {
        if let Some(h) = host {
            t.insert(Realm::Node(*id), keys::HOSTNAME, &Value::String(h.clone()))?;
        }
        t.insert(Realm::Node(*id), keys::NODEID, &Value::Uint32(*id))?;
        for (k, v) in pairs {
            t.insert(Realm::Node(*id), k, v)?;
        }
    }
    // A proc's hostname equal to its node's is derived at read time, not stored: at scale that
    // is most of what a full registration would otherwise cost per rank.
    let mut node_of_rank: HashMap<u32, u32> = HashMap::new();
    for (i, ranks) in per_node.iter().enumerate() {
        node_of_rank.extend(ranks.iter().map(|&r| (r, i as u32)));
    }
    let mut host_of_node: HashMap<u32, &str> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (i as u32, h.as_str()))
        .collect();
    for (id, host, _) in &node_arrays {
        if let Some(h) = host {
            host_of_node.insert(*id, h);
        }
    }
    for (r, pairs) in &g.procs {
        let node = pairs
            .iter()
            .find(|(k, _)| k == keys::NODEID)
            .and_then(|(_, v)| number(v))
            .or_else(|| node_of_rank.get(r).copied());
        for (k, v) in pairs {
            let derivable = k == keys::HOSTNAME
                && node
                    .and_then(|n| host_of_node.get(&n))
                    .is_some_and(|h| text(v) == Some(h))
                && matches!(v, Value::String(_));
            if !derivable {
                t.insert(Realm::Proc(*r), k, v)?;
            }
        }
    }
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
