//! The node realm of a registration and the node lookup by name, made as one sorted run: what
//! the maps give each node (its hostname and id), overridden by the node arrays and the local
//! node's top-level keys in document order, under the maps' local size, leader and peers (which
//! win, as in OpenPMIx), then the hostname index (`jobdata::node_names`). Made node
//! by node with no hashing per entry: at 1M ranks on 15,625 nodes that is ~110k entries, which
//! inserted one by one (the maps' value, then the array's again) took ~130 ms of the
//! registration (docs/performance.md).

use super::bad;
use super::derive::peers_list;
use super::input::{infos_of, RegInfo};
use crate::error::Result;
use crate::jobdata::keys::{self, meta};
use crate::jobdata::node_names;
use crate::layout::{Realm, VALUE_ALIGN};
use crate::table::bulk::{append_stored, byte_order, run_loc, BulkEntry, SortedRun};
use crate::table::check_key;
use crate::value::Value;
use std::collections::HashMap;

const NODE_CLASS: u16 = Realm::Node(0).class_id().0;
const META: (u16, u32) = Realm::Meta.class_id();

/// Where the value of one of a node's entries comes from.
enum Source<'a, I> {
    /// The node map's hostname.
    Hostname,
    /// The node's id (the maps', or a node array's).
    NodeId,
    /// The process map's count of the node's ranks.
    LocalSize,
    /// The lowest of them.
    Leader,
    /// All of them, a comma-separated list.
    Peers,
    /// An element of a node array.
    Given(&'a I),
}

// Not derived: that would ask `I: Copy`.
impl<I> Clone for Source<'_, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for Source<'_, I> {}

/// What the registration gives a node: a node array, or a top-level node key of the store's
/// own node (OpenPMIx files those under the server's node, `hash_cache_job_info`).
pub(super) enum NodeGiven<'a, I> {
    Array(&'a I),
    Key(&'a I),
}

impl<I> Clone for NodeGiven<'_, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for NodeGiven<'_, I> {}

/// The node realm of nodes `0..max(hosts, per_node)` (the maps') and of the nodes the node
/// arrays name (`given`: node id and array or top-level key, in document order). A later key
/// overrides an earlier one and the maps' hostname and id; the maps' local size, leader and peers
/// override them all (OpenPMIx stores them last, `pmix_gds_hash_store_map`). Then the meta value [`meta::NODES_BY_NAME`]: the index of
/// `names` (hostname -> node id). `arena`: where the values go (reserved by the caller, so that its
/// pages can be faulted in ahead).
pub(super) fn node_run<'a, I: RegInfo>(
    hosts: &[String],
    per_node: &[Vec<u32>],
    mut given: Vec<(u32, NodeGiven<'a, I>)>,
    names: &HashMap<String, u32>,
    arena: Vec<u8>,
) -> Result<SortedRun> {
    // Stable: a node's arrays stay in document order.
    given.sort_by_key(|&(id, _)| id);
    let mut run = RunWriter {
        keys: Vec::new(),
        key_ids: HashMap::new(),
        entries: Vec::with_capacity(per_node.len().max(hosts.len()) * 5 + given.len() * 6 + 1),
        arena,
    };
    let mapped = hosts.len().max(per_node.len()) as u64;
    let (mut next_mapped, mut next_given) = (0u64, 0usize);
    // (key, source), in the order they apply; reused from node to node.
    let mut slots: Vec<(&'a str, Source<'a, I>)> = Vec::new();
    loop {
        let m = (next_mapped < mapped).then_some(next_mapped);
        let g = given.get(next_given).map(|&(id, _)| u64::from(id));
        let node = match (m, g) {
            (Some(m), Some(g)) => m.min(g),
            (Some(n), None) | (None, Some(n)) => n,
            (None, None) => break,
        };
        if m == Some(node) {
            next_mapped += 1;
        }
        let start = next_given;
        while given
            .get(next_given)
            .is_some_and(|&(id, _)| u64::from(id) == node)
        {
            next_given += 1;
        }
        // Below 2^32: a mapped node's index (the maps hold fewer) or an array's id.
        let node = node as u32;
        slots.clear();
        if (node as usize) < hosts.len() {
            slots.push((keys::HOSTNAME, Source::Hostname));
            slots.push((keys::NODEID, Source::NodeId));
        }
        for &(_, g) in &given[start..next_given] {
            let array = match g {
                NodeGiven::Array(array) => array,
                NodeGiven::Key(i) => {
                    check_key(i.key())?;
                    slots.push((i.key(), Source::Given(i)));
                    continue;
                }
            };
            slots.push((keys::NODEID, Source::NodeId));
            for i in infos_of(array)? {
                let key = i.key();
                if key == keys::NODEID {
                    // The first was read as a number by pass 1; a repeat is not stored.
                    i.check()?;
                } else {
                    check_key(key)?;
                    slots.push((key, Source::Given(i)));
                }
            }
        }
        if per_node.get(node as usize).is_some_and(|r| !r.is_empty()) {
            slots.push((keys::LOCAL_SIZE, Source::LocalSize));
            slots.push((keys::LOCALLDR, Source::Leader));
            slots.push((keys::LOCAL_PEERS, Source::Peers));
        }
        // Key order (the run's), the last of equal keys kept (stable: in the order given).
        slots.sort_by(|a, b| a.0.cmp(b.0));
        let ranks = per_node.get(node as usize).map(Vec::as_slice);
        for (at, &(key, source)) in slots.iter().enumerate() {
            if slots.get(at + 1).is_some_and(|next| next.0 == key) {
                continue;
            }
            let ranks = ranks.unwrap_or(&[]);
            let value = match source {
                Source::Given(i) => {
                    run.push(node, key, &*i.value()?)?;
                    continue;
                }
                Source::Hostname => Value::String(hosts[node as usize].clone()),
                Source::NodeId => Value::Uint32(node),
                Source::LocalSize => Value::Uint32(ranks.len() as u32),
                // Pushed only for a node with ranks.
                Source::Leader => Value::ProcRank(ranks[0]),
                Source::Peers => Value::String(peers_list(ranks)),
            };
            run.push(node, key, &value)?;
        }
    }
    // The meta class follows the node class.
    if !names.is_empty() {
        let index = node_names::build(names.iter().map(|(h, &id)| (h.as_str(), id)))?;
        run.push_new_key(META, meta::NODES_BY_NAME.into(), &Value::ByteObject(index))?;
    }
    Ok(run.finish())
}

/// A run being written in its order.
struct RunWriter<'k> {
    keys: Vec<Box<str>>,
    key_ids: HashMap<&'k str, u32>,
    entries: Vec<BulkEntry>,
    arena: Vec<u8>,
}

impl<'k> RunWriter<'k> {
    /// Node `node`'s `key`.
    fn push(&mut self, node: u32, key: &'k str, value: &Value) -> Result<()> {
        let kid = match self.key_ids.get(key) {
            Some(&k) => k,
            None => {
                self.keys.push(key.into());
                let k = self.keys.len() as u32 - 1;
                self.key_ids.insert(key, k);
                k
            }
        };
        self.entry((NODE_CLASS, node), kid, value)
    }

    /// An entry of `realm` (class, id) under a key no entry has yet.
    fn push_new_key(&mut self, realm: (u16, u32), key: Box<str>, value: &Value) -> Result<()> {
        self.keys.push(key);
        self.entry(realm, self.keys.len() as u32 - 1, value)
    }

    /// The entry, its value stored as [`crate::table::TableBuilder::insert`] stores it.
    fn entry(&mut self, (class, id): (u16, u32), kid: u32, value: &Value) -> Result<()> {
        let off = self.arena.len();
        let flags = append_stored(&mut self.arena, value)?;
        let len = u32::try_from(self.arena.len() - off)
            .map_err(|_| bad("a node value larger than 4 GiB".into()))?;
        // Padded as the segment pads values: the run's values, in its order, are then one
        // piece to write (`ValueWriter`).
        self.arena
            .resize(self.arena.len().next_multiple_of(VALUE_ALIGN), 0);
        self.entries.push(BulkEntry {
            class,
            flags,
            id,
            kid,
            len,
            loc: run_loc(0, off),
        });
        Ok(())
    }

    fn finish(self) -> SortedRun {
        debug_assert!({
            let order = byte_order(&self.keys);
            let pos = |e: &BulkEntry| (e.class, e.id, order[e.kid as usize]);
            self.entries.windows(2).all(|w| pos(&w[0]) < pos(&w[1]))
        });
        SortedRun {
            keys: self.keys,
            entries: self.entries,
            arenas: vec![self.arena],
            wasted: 0,
        }
    }
}
