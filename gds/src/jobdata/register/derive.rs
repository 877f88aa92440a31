//! The keys a server answers from the node and process maps alone (docs/jobdata.md): the job
//! realm's ([`derive()`]), each rank's proc columns ([`derive_columns`]), and the peers lists.

use super::input::infos_of;
use super::scan::member;
use super::{bad, RegInfo};
use crate::error::Result;
use crate::jobdata::keys;
use crate::layout::Realm;
use crate::table::TableBuilder;
use crate::value::Value;

/// The job-realm keys OpenPMIx 4.2.2 answers from the node and process maps alone: the job's
/// size and nodes, and the local size, leader and peers of the store's own node (each node's
/// are [`node_realm`](super::node_realm)'s, each rank's [`derive_columns`]'; docs/jobdata.md).
pub(super) fn derive(
    t: &mut TableBuilder,
    hosts: &[String],
    per_node: &[Vec<u32>],
    job_size: u32,
    local_nodeid: Option<u32>,
) -> Result<()> {
    if !hosts.is_empty() || !per_node.is_empty() {
        t.insert(Realm::Job, keys::JOB_SIZE, &Value::Uint32(job_size))?;
        t.insert(Realm::Job, keys::MAX_PROCS, &Value::Uint32(job_size))?;
        let nodes = hosts.len().max(per_node.len()) as u32;
        t.insert(Realm::Job, keys::NUM_NODES, &Value::Uint32(nodes))?;
    }
    if !hosts.is_empty() {
        t.insert(Realm::Job, keys::NODE_LIST, &Value::String(hosts.join(",")))?;
    }
    // A node's local ranks are uint16s (derive_columns counts on this check).
    if per_node.iter().any(|n| n.len() > 1 << 16) {
        return Err(bad("more than 65535 ranks on a node".into()));
    }
    // The node realm is node_realm's; the job realm describes the store's own node.
    if let Some(ranks) = local_nodeid.and_then(|n| per_node.get(n as usize)) {
        if let Some(&leader) = ranks.first() {
            t.insert(
                Realm::Job,
                keys::LOCAL_SIZE,
                &Value::Uint32(ranks.len() as u32),
            )?;
            t.insert(Realm::Job, keys::LOCALLDR, &Value::ProcRank(leader))?;
            t.insert(
                Realm::Job,
                keys::LOCAL_PEERS,
                &Value::String(peers_list(ranks)),
            )?;
        }
    }
    Ok(())
}

/// A node's peers as PMIX_LOCAL_PEERS lists them: its ranks in the process map's order,
/// comma-separated. The map's order is OpenPMIx's too (its `store_map` keeps the list as given:
/// the first listed is the node's leader and a rank's local rank is its place in the list), and
/// a launcher that maps by core lists a node's ranks out of order.
pub(super) fn peers_list(ranks: &[u32]) -> String {
    let mut peers = Vec::with_capacity(ranks.len() * 8);
    let mut n = Decimal::default();
    for (i, &r) in ranks.iter().enumerate() {
        if i > 0 {
            peers.push(b',');
        }
        n.set(r);
        peers.extend_from_slice(n.digits());
    }
    String::from_utf8(peers).expect("decimal digits and commas")
}

/// The per-rank keys OpenPMIx 4.2.2 answers from the process map alone: each rank's local and
/// node rank and node id (docs/jobdata.md), into the proc columns where no value is yet.
pub(super) fn derive_columns(t: &mut TableBuilder, per_node: &[Vec<u32>]) -> Result<()> {
    let column = |key| TableBuilder::column_index(key).expect("a proc column key");
    let (lrank, nrank, nodeid) = (
        column(keys::LOCAL_RANK),
        column(keys::NODE_RANK),
        column(keys::NODEID),
    );
    for (i, ranks) in per_node.iter().enumerate() {
        let node = i as u32;
        for (local, &r) in ranks.iter().enumerate() {
            // Below 65536: `derive` refused larger nodes.
            let local = local as u32;
            t.insert_column_if_absent(lrank, r, local)?;
            t.insert_column_if_absent(nrank, r, local)?;
            t.insert_column_if_absent(nodeid, r, node)?;
        }
    }
    Ok(())
}

/// PMIX_APPNUM 0 for each process whose proc array names no app, as OpenPMIx 4.2.2's hash
/// files it (its job-info cache assumes app 0 for such a process): Open MPI registers a
/// one-app job's processes so, and its ranks read their PMIX_APPNUM. A rank without a proc
/// array gets none. Skipped when some rank's app number was given as another type than
/// uint32 (an entry, which the column would replace).
pub(super) fn default_appnum<I: RegInfo>(t: &mut TableBuilder, procs: &[&I]) -> Result<()> {
    let c = TableBuilder::column_index(keys::APPNUM).expect("a proc column key");
    if procs.is_empty() || t.column_key_in_entries(c) {
        return Ok(());
    }
    for info in procs {
        let rank = member(infos_of(*info)?, keys::RANK).and_then(RegInfo::number);
        if let Some(r) = rank {
            t.insert_column_if_absent(c, r, 0)?;
        }
    }
    Ok(())
}

/// A number in decimal, kept as its digits: a node's ranks are mostly consecutive, and the
/// next one's digits are the last one's counted up (a million ranks' peers lists at 1M, where
/// writing each number anew cost ~19 ns, `write!` ~20 ns).
pub(super) struct Decimal {
    /// The digits, right-aligned: `digits[start..]`.
    digits: [u8; 10],
    start: usize,
    value: Option<u32>,
}

impl Default for Decimal {
    fn default() -> Self {
        Decimal {
            digits: [b'0'; 10],
            start: 9,
            value: None,
        }
    }
}

impl Decimal {
    fn set(&mut self, n: u32) {
        if self.value.is_some_and(|v| v.checked_add(1) == Some(n)) {
            // Count up: nines roll over to zeros, then one digit goes up (or a new one leads).
            // Left of `start` are stale digits, read as zeros.
            let mut at = self.digits.len() - 1;
            while at >= self.start && self.digits[at] == b'9' {
                self.digits[at] = b'0';
                // n < 2^32 has at most 10 digits, the first not a 9: `at` stays >= 0.
                at -= 1;
            }
            if at < self.start {
                self.digits[at] = b'1';
                self.start = at;
            } else {
                self.digits[at] += 1;
            }
        } else {
            let mut v = n;
            let mut at = self.digits.len();
            loop {
                at -= 1;
                self.digits[at] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            self.start = at;
        }
        self.value = Some(n);
    }

    fn digits(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Peers lists as `format!` writes them: runs that carry over (9 -> 10, 999 -> 1000), jumps
    /// down to fewer digits and up to more, and the largest ranks.
    #[test]
    fn peers_lists_are_the_ranks_in_decimal() {
        let mut lists: Vec<Vec<u32>> = vec![
            (0..2000).collect(),
            vec![12345, 7, 8, 9, 10, 11, 99, 100, 101],
            vec![99, 5, 6, 7, 8, 9, 10, 11],
            vec![999_999_998, 999_999_999, 1_000_000_000, 5, 6],
            vec![u32::MAX - 2, u32::MAX - 1, u32::MAX],
            vec![0],
            vec![],
        ];
        let mut x = 0x9e37_79b9u32;
        lists.push(
            (0..5000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Runs of neighbours among jumps.
                    if x.is_multiple_of(3) {
                        x % 1000
                    } else {
                        x
                    }
                })
                .collect(),
        );
        for ranks in lists {
            let want = ranks
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(",");
            assert_eq!(peers_list(&ranks), want);
        }
    }
}
