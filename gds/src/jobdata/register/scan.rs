//! Pass 1 of a registration: the scan ([`ScanPlan`]) finds what must be known before anything
//! is stored (the maps, the session, the nodes, the job's size) and lists the proc arrays and
//! the other infos that pass 2 applies.

use std::sync::{Mutex, PoisonError};

use super::bad;
use super::input::{infos_of, Ahead, RegInfo, PREFETCH_INFO};
use super::read_ahead::{helper_threads, READ_BLOCK};
use crate::bytes::same_bytes;
use crate::error::Result;
use crate::jobdata::keys;
use crate::jobdata::maps::{parse_node_map, parse_proc_map};
use crate::jobdata::query::RANK_VALID;

/// Pass 1: what must be known before anything is stored (the maps, the session, the nodes).
pub(super) struct ScanPlan<'a, I> {
    pub(super) session_id: Option<u32>,
    pub(super) hosts: Vec<String>,
    pub(super) per_node: Vec<Vec<u32>>,
    /// Node arrays: (node id if given, hostname if given).
    pub(super) node_arrays: Vec<(Option<u32>, Option<&'a str>)>,
    pub(super) registered_size: Option<u32>,
    /// The proc arrays, at any level, in order.
    pub(super) proc_arrays: Vec<&'a I>,
    /// Everything else pass 2 applies, in order, with where it was given: the infos outside
    /// session and job arrays and inside them, not the arrays themselves.
    pub(super) ops: Vec<(&'a I, Place)>,
    /// The app numbers of the app arrays, at any level, in order.
    pub(super) apps: Vec<u32>,
}

/// Where an info of [`ScanPlan::ops`] was given: a top-level key of a realm below the job
/// goes to that realm too (docs/jobdata.md, "Keys given outside their realm").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Top,
    JobArray,
    SessionArray,
}

/// The first element of an array with key `key`.
pub(super) fn member<'a, I: RegInfo + 'a>(
    items: impl Iterator<Item = &'a I>,
    key: &str,
) -> Option<&'a I> {
    items.into_iter().find(|i| i.key() == key)
}

/// The identifying number `key` (named `name` in errors) of the array `what`.
pub(super) fn required_number<'a, I: RegInfo + 'a>(
    items: impl Iterator<Item = &'a I>,
    key: &str,
    name: &str,
    what: &str,
) -> Result<u32> {
    let v = member(items, key).ok_or_else(|| bad(format!("{what} without {name}")))?;
    v.number()
        .ok_or_else(|| bad(format!("{name} in {what} must be a non-negative number")))
}

impl<'a, I: RegInfo + 'a> ScanPlan<'a, I> {
    /// For a top-level array of `n` infos: nearly all of them proc arrays at scale, a list
    /// reserved once rather than grown (each doubling a copy into fresh pages).
    pub(super) fn new(n: usize) -> Self {
        ScanPlan {
            session_id: None,
            hosts: Vec::new(),
            per_node: Vec::new(),
            node_arrays: Vec::new(),
            registered_size: None,
            proc_arrays: Vec::with_capacity(n),
            ops: Vec::new(),
            apps: Vec::new(),
        }
    }

    /// One past the highest rank with a proc array.
    pub(super) fn proc_end(&self) -> Result<Option<u32>> {
        let mut end = None;
        for info in &self.proc_arrays {
            let r = required_number(infos_of(*info)?, keys::RANK, "PMIX_RANK", "a proc array")?;
            check_rank(r)?;
            end = Some(end.unwrap_or(0).max(r + 1));
        }
        Ok(end)
    }

    /// The top level: the proc arrays told apart first ([`proc_arrays_among`], on every core
    /// at scale), then everything else scanned in order.
    pub(super) fn scan_top(&mut self, infos: &'a [I]) -> Result<()> {
        let is_proc = proc_arrays_among(infos);
        for (info, &p) in infos.iter().zip(&is_proc) {
            if p {
                self.proc_arrays.push(info);
            } else {
                self.scan_one(info, false, 0)?;
            }
        }
        Ok(())
    }

    /// The inside of a job or session array (`session` true), `depth` such arrays deep.
    fn scan(
        &mut self,
        infos: impl Iterator<Item = &'a I> + Clone,
        session: bool,
        depth: usize,
    ) -> Result<()> {
        // A C array may hold itself: refused before the stack runs out.
        if depth > NESTING_MAX {
            return Err(bad(format!(
                "job or session arrays nested more than {NESTING_MAX} deep"
            )));
        }
        let mut ahead_info = infos.clone().skip(PREFETCH_INFO);
        for info in infos {
            if let Some(i) = ahead_info.next() {
                i.prefetch(Ahead::Info);
            }
            if is_proc_array(info) {
                self.proc_arrays.push(info);
            } else {
                self.scan_one(info, session, depth)?;
            }
        }
        Ok(())
    }

    /// An info that is not a proc array, `depth` job or session arrays deep.
    fn scan_one(&mut self, info: &'a I, session: bool, depth: usize) -> Result<()> {
        // Only the element itself is read here (a proc array is kept for pass 2, which checks
        // it: walked here, for its ranks, only if the job's size is not known otherwise).
        let key = info.key();
        if !matches!(key, keys::SESSION_INFO_ARRAY | keys::JOB_INFO_ARRAY) {
            let place = match (session, depth) {
                (true, _) => Place::SessionArray,
                (false, 0) => Place::Top,
                (false, _) => Place::JobArray,
            };
            self.ops.push((info, place));
        }
        match key {
            keys::SESSION_INFO_ARRAY => self.scan(infos_of(info)?, true, depth + 1)?,
            keys::JOB_INFO_ARRAY => self.scan(infos_of(info)?, false, depth + 1)?,
            keys::APP_INFO_ARRAY => {
                let n =
                    required_number(infos_of(info)?, keys::APPNUM, "PMIX_APPNUM", "an app array")?;
                self.apps.push(n);
            }
            keys::NODE_INFO_ARRAY => {
                let items = infos_of(info)?;
                let id = match member(items.clone(), keys::NODEID) {
                    Some(v) => Some(
                        v.number()
                            .ok_or_else(|| bad("PMIX_NODEID must be a number".into()))?,
                    ),
                    None => None,
                };
                let host = match member(items, keys::HOSTNAME) {
                    Some(v) => Some(
                        v.text()
                            .ok_or_else(|| bad("PMIX_HOSTNAME must be a string".into()))?,
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
            keys::NODE_MAP | keys::NODE_MAP_RAW => {
                self.hosts = parse_node_map(
                    info.text()
                        .ok_or_else(|| bad(format!("{key} must be a string")))?,
                )?;
            }
            keys::PROC_MAP | keys::PROC_MAP_RAW => {
                self.per_node = parse_proc_map(
                    info.text()
                        .ok_or_else(|| bad(format!("{key} must be a string")))?,
                )?;
            }
            keys::SESSION_ID if session || self.session_id.is_none() => {
                self.session_id = Some(
                    info.number()
                        .ok_or_else(|| bad("PMIX_SESSION_ID must be a number".into()))?,
                );
            }
            keys::JOB_SIZE if !session => self.registered_size = info.number(),
            _ => {}
        }
        Ok(())
    }
}

/// A proc array's rank that is not a reserved value (wildcard, undef, local node...: none
/// names one process).
pub(super) fn check_rank(r: u32) -> Result<()> {
    if r >= RANK_VALID {
        return Err(bad(format!(
            "PMIX_RANK {r:#x} in a proc array is a reserved rank value (>= {RANK_VALID:#x})"
        )));
    }
    Ok(())
}

/// Job and session arrays nested deeper than this are refused.
pub(super) const NESTING_MAX: usize = 32;

/// Whether an info is a proc array, by its key alone (its value is checked where it is read).
pub(super) fn is_proc_array<I: RegInfo>(info: &I) -> bool {
    same_bytes(info.key().as_bytes(), keys::PROC_INFO_ARRAY.as_bytes())
}

/// Which top-level infos are proc arrays. At scale this is the first read of a million infos
/// 552 bytes apart in the caller's memory (a C array's), so it runs on the threads the
/// read-ahead uses, each taking blocks of [`READ_BLOCK`] infos: on a VM a first read of
/// memory the caller wrote can cost several times a second one (docs/performance.md), and two
/// cores take that in half the time.
pub(super) fn proc_arrays_among<I: RegInfo>(infos: &[I]) -> Vec<bool> {
    let mut is_proc = vec![false; infos.len()];
    let blocks = Mutex::new(is_proc.chunks_mut(READ_BLOCK).enumerate());
    let classify = || loop {
        let next = blocks.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((b, out)) = next else {
            break;
        };
        // Ahead of the walk runs into the next block: no stall at a block's start.
        let from = &infos[b * READ_BLOCK..];
        let mut ahead = from.iter().skip(PREFETCH_INFO);
        for (info, out) in from.iter().zip(out) {
            if let Some(i) = ahead.next() {
                i.prefetch(Ahead::Key);
            }
            *out = is_proc_array(info);
        }
    };
    std::thread::scope(|s| {
        // A thread that cannot be started is done without (the calling one takes its blocks).
        for _ in 0..helper_threads(infos.len()) {
            let thread = std::thread::Builder::new().name("rshm-register".into());
            let _ = thread.spawn_scoped(s, classify);
        }
        classify();
    });
    is_proc
}
