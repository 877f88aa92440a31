//! From a registration info array (what `PMIx_server_register_nspace` receives, assembled as the
//! standard's 17.2.3.2 describes) to a table: realms sorted out at write time, the keys a server
//! must answer derived from the node and process maps, the standard per-rank keys in proc
//! columns. docs/jobdata.md lists what is derived and what is stored where.

#![forbid(unsafe_code)]

use std::collections::HashMap;

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

/// The elements of an info-array value (a data array of PMIX_INFO), as a slice: walked in
/// place, twice, without collecting.
fn infos_of<'a>(key: &str, v: &'a Value) -> Result<&'a [Value]> {
    match v {
        Value::DataArray(a) if a.elem_type == types::INFO => Ok(&a.items),
        _ => Err(bad(format!("{key} must be an array of pmix_info_t"))),
    }
}

/// The infos of an info-array slice.
fn each(items: &[Value]) -> impl Iterator<Item = &Info> {
    items.iter().filter_map(|i| match i {
        Value::Info(info) => Some(&**info),
        _ => None,
    })
}

/// Pass 1: what must be known before anything is stored (the maps, the session, the nodes).
#[derive(Default)]
struct Layout<'a> {
    session_id: Option<u32>,
    hosts: Vec<String>,
    per_node: Vec<Vec<u32>>,
    /// Node arrays: (node id if given, hostname if given).
    node_arrays: Vec<(Option<u32>, Option<&'a str>)>,
    registered_size: Option<u32>,
    /// One past the highest rank with a proc array.
    proc_end: Option<u32>,
}

/// The value of `key` among an array's elements.
fn member<'a>(items: &'a [Value], key: &str) -> Option<&'a Value> {
    each(items).find(|i| i.key == key).map(|i| &i.value)
}

/// The identifying number `key` (named `name` in errors) of the array `what`.
fn required_number(items: &[Value], key: &str, name: &str, what: &str) -> Result<u32> {
    let v = member(items, key).ok_or_else(|| bad(format!("{what} without {name}")))?;
    number(v).ok_or_else(|| bad(format!("{name} in {what} must be a non-negative number")))
}

impl<'a> Layout<'a> {
    /// Top level, or the inside of a job or session array (`session` true).
    fn scan(&mut self, infos: impl Iterator<Item = &'a Info>, session: bool) -> Result<()> {
        for info in infos {
            let (key, v) = (info.key.as_str(), &info.value);
            match key {
                keys::SESSION_INFO_ARRAY => self.scan(each(infos_of(key, v)?), true)?,
                keys::JOB_INFO_ARRAY => self.scan(each(infos_of(key, v)?), false)?,
                keys::APP_INFO_ARRAY => {
                    required_number(
                        infos_of(key, v)?,
                        keys::APPNUM,
                        "PMIX_APPNUM",
                        "an app array",
                    )?;
                }
                keys::NODE_INFO_ARRAY => {
                    let items = infos_of(key, v)?;
                    let id = match member(items, keys::NODEID) {
                        Some(v) => Some(
                            number(v).ok_or_else(|| bad("PMIX_NODEID must be a number".into()))?,
                        ),
                        None => None,
                    };
                    let host = match member(items, keys::HOSTNAME) {
                        Some(v) => Some(
                            text(v).ok_or_else(|| bad("PMIX_HOSTNAME must be a string".into()))?,
                        ),
                        None => None,
                    };
                    if id.is_none() && host.is_none() {
                        return Err(bad(
                            "a node array without PMIX_NODEID or PMIX_HOSTNAME".into()
                        ));
                    }
                    self.node_arrays.push((id, host));
                }
                keys::PROC_INFO_ARRAY => {
                    let items = infos_of(key, v)?;
                    let r = required_number(items, keys::RANK, "PMIX_RANK", "a proc array")?;
                    self.proc_end = Some(self.proc_end.unwrap_or(0).max(r.saturating_add(1)));
                }
                keys::NODE_MAP | keys::NODE_MAP_RAW => {
                    self.hosts = parse_node_map(
                        text(v).ok_or_else(|| bad(format!("{key} must be a string")))?,
                    )?;
                }
                keys::PROC_MAP | keys::PROC_MAP_RAW => {
                    self.per_node = parse_proc_map(
                        text(v).ok_or_else(|| bad(format!("{key} must be a string")))?,
                    )?;
                }
                keys::SESSION_ID if session || self.session_id.is_none() => {
                    self.session_id = Some(
                        number(v).ok_or_else(|| bad("PMIX_SESSION_ID must be a number".into()))?,
                    );
                }
                keys::JOB_SIZE if !session => self.registered_size = number(v),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Pass 2: everything the host registered, stored over what was derived.
struct Apply<'l> {
    session_id: u32,
    node_ids: &'l HashMap<String, u32>,
    host_of_node: &'l HashMap<u32, String>,
    node_of_rank: &'l [u32],
}

impl Apply<'_> {
    fn apply<'i>(
        &self,
        t: &mut TableBuilder,
        infos: impl Iterator<Item = &'i Info>,
        session: bool,
    ) -> Result<()> {
        for info in infos {
            let (key, v) = (info.key.as_str(), &info.value);
            match key {
                keys::SESSION_INFO_ARRAY => self.apply(t, each(infos_of(key, v)?), true)?,
                keys::JOB_INFO_ARRAY => self.apply(t, each(infos_of(key, v)?), false)?,
                keys::APP_INFO_ARRAY => {
                    let items = infos_of(key, v)?;
                    let n = required_number(items, keys::APPNUM, "PMIX_APPNUM", "an app array")?;
                    for i in each(items) {
                        t.insert(Realm::App(n), &i.key, &i.value)?;
                    }
                }
                keys::NODE_INFO_ARRAY => {
                    let items = infos_of(key, v)?;
                    let id = match member(items, keys::NODEID).and_then(number) {
                        Some(id) => id,
                        None => member(items, keys::HOSTNAME)
                            .and_then(text)
                            .and_then(|h| self.node_ids.get(h).copied())
                            .ok_or_else(|| bad("a node array names no node".into()))?,
                    };
                    t.insert(Realm::Node(id), keys::NODEID, &Value::Uint32(id))?;
                    for i in each(items) {
                        if i.key != keys::NODEID {
                            t.insert(Realm::Node(id), &i.key, &i.value)?;
                        }
                    }
                }
                keys::PROC_INFO_ARRAY => {
                    let items = infos_of(key, v)?;
                    let r = required_number(items, keys::RANK, "PMIX_RANK", "a proc array")?;
                    let node = member(items, keys::NODEID).and_then(number).or_else(|| {
                        self.node_of_rank
                            .get(r as usize)
                            .copied()
                            .filter(|&n| n != u32::MAX)
                    });
                    for i in each(items) {
                        // The identifier is not a value; a hostname equal to the rank's node's
                        // is read through the node (at scale, most of what a full registration
                        // would otherwise cost per rank).
                        let derivable = i.key == keys::HOSTNAME
                            && matches!(&i.value, Value::String(h)
                                if node.and_then(|n| self.host_of_node.get(&n)) == Some(h));
                        if i.key != keys::RANK && !derivable {
                            t.insert(Realm::Proc(r), &i.key, &i.value)?;
                        }
                    }
                }
                keys::NODE_MAP | keys::NODE_MAP_RAW | keys::PROC_MAP | keys::PROC_MAP_RAW => {}
                keys::SESSION_ID if session => {}
                _ if session || default_realm(key) == DefaultRealm::Session => {
                    t.insert(Realm::Session(self.session_id), key, v)?;
                }
                _ => t.insert(Realm::Job, key, v)?,
            }
        }
        Ok(())
    }
}

/// Build the job-data table of a namespace from its registration info array. `local_host` is
/// the hostname of the store's node (the server's), which the job-realm "local" keys describe.
pub fn build(local_host: Option<&str>, infos: &[Info]) -> Result<(TableBuilder, JobSummary)> {
    let mut l = Layout::default();
    l.scan(infos.iter(), false)?;
    let (hosts, per_node) = (&l.hosts, &l.per_node);
    if !per_node.is_empty() && !hosts.is_empty() && per_node.len() != hosts.len() {
        return Err(bad(format!(
            "the node map names {} nodes but the process map {}",
            hosts.len(),
            per_node.len()
        )));
    }
    let mapped: u64 = per_node.iter().map(|n| n.len() as u64).sum();
    let map_end = per_node.iter().flatten().max().map(|r| r + 1);
    let job_size = l
        .registered_size
        .or(u32::try_from(mapped).ok().filter(|&m| m > 0))
        .or(map_end.max(l.proc_end))
        .unwrap_or(0);

    let mut t = TableBuilder::with_ranks(job_size);
    let session_id = l.session_id.unwrap_or(0);
    t.insert(Realm::Meta, meta::SESSION_ID, &Value::Uint32(session_id))?;

    // Node ids: the node map's order; node arrays may add nodes (by id, or by a new hostname).
    let mut node_ids: HashMap<String, u32> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.clone(), i as u32))
        .collect();
    let mut host_of_node: HashMap<u32, String> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (i as u32, h.clone()))
        .collect();
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
        node_ids.insert(h.to_owned(), id);
        host_of_node.insert(id, h.to_owned());
        t.insert(
            Realm::Node(id),
            keys::HOSTNAME,
            &Value::String(h.to_owned()),
        )?;
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
        let nodes = hosts.len().max(per_node.len()) as u32;
        t.insert(Realm::Job, keys::NUM_NODES, &Value::Uint32(nodes))?;
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
    let mut node_of_rank = vec![u32::MAX; job_size as usize];
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
            if let Some(slot) = node_of_rank.get_mut(r as usize) {
                *slot = node;
            }
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
    let apply = Apply {
        session_id,
        node_ids: &node_ids,
        host_of_node: &host_of_node,
        node_of_rank: &node_of_rank,
    };
    apply.apply(&mut t, infos.iter(), false)?;
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
