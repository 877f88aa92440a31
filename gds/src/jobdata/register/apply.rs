//! Pass 2 of a registration: what the host registered, stored over what was derived
//! ([`Apply`]), and the proc arrays the read-ahead could not merge as one run, applied in
//! document order.

use std::collections::HashMap;

use super::bad;
use super::input::{infos_of, RegInfo};
use super::node_realm::NodeGiven;
use super::read_ahead::{read_columns, Nodes, ProcRead, ReadAhead, READ_BLOCK};
use super::scan::{check_rank, member, required_number, Place};
use crate::error::Result;
use crate::jobdata::keys::{self, default_realm, DefaultRealm};
use crate::layout::{Realm, COLUMN_KINDS};
use crate::table::bulk::value_in;
use crate::table::TableBuilder;

/// A [`ProcRead::Columns`] row's column values stored (`u32::MAX`: not given).
pub(super) fn set_row(t: &mut TableBuilder, rank: u32, cols: &[u32; COLUMN_KINDS.len()]) {
    for (c, &v) in cols.iter().enumerate() {
        if v != u32::MAX {
            t.set_column(c, rank, v);
        }
    }
}

/// Pass 2: everything the host registered, stored over what was derived.
pub(super) struct Apply<'l> {
    pub(super) session_id: u32,
    /// Ranks in the job: a proc array's rank is below.
    pub(super) job_size: u32,
    pub(super) node_ids: &'l HashMap<String, u32>,
    pub(super) nodes: Nodes<'l>,
    /// The store's own node, when the registration names it: where top-level node keys go.
    pub(super) local_node: Option<u32>,
    /// Whether the maps give the local node's ranks: then its local size, leader and peers in
    /// the job realm are the maps' (the registered ones are the node's, which the maps' win).
    pub(super) local_mapped: bool,
    /// The job's only app (0 when no app array names one; none with several): where top-level
    /// app keys go.
    pub(super) only_app: Option<u32>,
}

impl Apply<'_> {
    /// One info of pass 1's `ops`, given at `place`. A node array is only told its node and
    /// pushed to `node_arrays`, for [`super::node_realm::node_run`]; so is a top-level node key
    /// of the local node (as OpenPMIx files it, `hash_cache_job_info`: docs/jobdata.md "Keys
    /// given outside their realm").
    pub(super) fn op<'i, I: RegInfo>(
        &self,
        t: &mut TableBuilder,
        info: &'i I,
        place: Place,
        node_arrays: &mut Vec<(u32, NodeGiven<'i, I>)>,
    ) -> Result<()> {
        let key = info.key();
        let session = place == Place::SessionArray;
        match key {
            keys::APP_INFO_ARRAY => {
                let items = infos_of(info)?;
                let n =
                    required_number(items.clone(), keys::APPNUM, "PMIX_APPNUM", "an app array")?;
                for i in items {
                    t.insert(Realm::App(n), i.key(), &*i.value()?)?;
                }
            }
            keys::NODE_INFO_ARRAY => {
                let items = infos_of(info)?;
                let id = match member(items.clone(), keys::NODEID).and_then(RegInfo::number) {
                    Some(id) => id,
                    None => member(items, keys::HOSTNAME)
                        .and_then(RegInfo::text)
                        .and_then(|h| self.node_ids.get(h).copied())
                        .ok_or_else(|| bad("a node array names no node".into()))?,
                };
                node_arrays.push((id, NodeGiven::Array(info)));
            }
            keys::NODE_MAP | keys::NODE_MAP_RAW | keys::PROC_MAP | keys::PROC_MAP_RAW => {}
            keys::SESSION_ID if session => {}
            _ if session || default_realm(key) == DefaultRealm::Session => {
                t.insert(Realm::Session(self.session_id), key, &*info.value()?)?;
            }
            _ if place == Place::Top => self.top_level(t, key, info, node_arrays)?,
            _ => t.insert(Realm::Job, key, &*info.value()?)?,
        }
        Ok(())
    }

    /// A top-level key outside any array: the job realm's, and also, for a node key, the local
    /// node's and, for an app key, the only app's. The maps' node keys of a mapped local node
    /// stay the maps' in the job realm too: OpenPMIx answers them from the node, where the maps'
    /// win.
    fn top_level<'i, I: RegInfo>(
        &self,
        t: &mut TableBuilder,
        key: &str,
        info: &'i I,
        node_arrays: &mut Vec<(u32, NodeGiven<'i, I>)>,
    ) -> Result<()> {
        let value = info.value()?;
        if !(self.local_mapped && keys::MAP_NODE_KEYS.contains(&key)) {
            t.insert(Realm::Job, key, &value)?;
        }
        if let Some(node) = self.local_node {
            if keys::TOP_LEVEL_NODE_KEYS.binary_search(&key).is_ok() {
                node_arrays.push((node, NodeGiven::Key(info)));
            }
        }
        if let Some(app) = self.only_app {
            if keys::TOP_LEVEL_APP_KEYS.binary_search(&key).is_ok() {
                t.insert(Realm::App(app), key, &value)?;
            }
        }
        Ok(())
    }

    /// The read-ahead's proc arrays applied one by one in document order: a row's columns
    /// and extras, a general array walked.
    pub(super) fn in_order<I: RegInfo>(
        &self,
        t: &mut TableBuilder,
        procs: &[&I],
        ahead: ReadAhead,
        ranks: u32,
    ) -> Result<()> {
        let value = |loc: u64, len: u32| value_in(&ahead.arenas, loc, len as usize);
        let mut scratch = Vec::new();
        for (b, block) in ahead.reads.chunks(READ_BLOCK).enumerate() {
            let extras = &ahead.extras[b];
            let mut entries = extras.entries.iter();
            for (read, info) in block.iter().zip(&procs[b * READ_BLOCK..]) {
                match ProcRead::unpack(read) {
                    ProcRead::Columns { rank, extras: n } => {
                        // The read-ahead stored the columns in no particular order: again, in
                        // this one (read as the read-ahead read them, so the same values).
                        scratch.clear();
                        if let Some((_, cols)) =
                            read_columns(*info, &self.nodes, ranks, &mut scratch)
                        {
                            set_row(t, rank, &cols);
                        }
                        for e in entries.by_ref().take(n as usize) {
                            let key = &extras.keys[e.kid as usize];
                            t.insert_stored(Realm::Proc(rank), key, e.flags, value(e.loc, e.len))?;
                        }
                    }
                    ProcRead::General => self.proc_array(t, *info)?,
                }
            }
        }
        Ok(())
    }

    /// A proc array the read-ahead left to this ([`ProcRead::General`]).
    fn proc_array<I: RegInfo>(&self, t: &mut TableBuilder, info: &I) -> Result<()> {
        // One walk finds the rank and node (the first of each) and keeps the elements.
        let mut elems: Vec<(&str, &I)> = Vec::new();
        let (mut rank, mut nodeid) = (None, None);
        for i in infos_of(info)? {
            let key = i.key();
            match key {
                keys::RANK if rank.is_none() => rank = Some(i),
                keys::NODEID if nodeid.is_none() => nodeid = Some(i),
                _ => {}
            }
            elems.push((key, i));
        }
        let r = rank
            .ok_or_else(|| bad("a proc array without PMIX_RANK".into()))?
            .number()
            .ok_or_else(|| bad("PMIX_RANK in a proc array must be a non-negative number".into()))?;
        check_rank(r)?;
        if r >= self.job_size {
            return Err(bad(format!(
                "rank {r} in a proc array, but the job has {} ranks",
                self.job_size
            )));
        }
        let node = self.nodes.of_rank(r, nodeid.and_then(RegInfo::number));
        for &(key, i) in &elems {
            if key == keys::RANK {
                // The identifier is not a value (nor stored: checked here, as what is stored is
                // checked by reading it).
                i.check()?;
                continue;
            }
            // A hostname equal to the rank's node's is read through the node (at scale, most of
            // what a full registration would otherwise cost per rank).
            if key == keys::HOSTNAME
                && i.string().is_some()
                && node.and_then(|n| self.nodes.host(n)) == i.string()
            {
                continue;
            }
            t.insert(Realm::Proc(r), key, &*i.value()?)?;
        }
        Ok(())
    }
}
