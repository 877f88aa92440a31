//! The job's process map in the PMI-1/PMI-2 "vector" notation of Argonne's process managers
//! (the standard's PMIX_ANL_MAP, 6.1.2): `(vector,(node,nodes,ranks),...)`, each triple a run of
//! `nodes` consecutive nodes from `node` on, each holding `ranks` consecutive ranks, the runs in
//! rank order. Computed once per job by the server (from the process map) and stored under
//! [`META_KEY`], so that a PMI-2 client reads it instead of rebuilding it from every rank's
//! node; a client without a store builds the same string from the same rule.
//!
//! Nodes are numbered in the order of their lowest rank (the node of rank 0 is node 0): the
//! numbering of Slurm's step layout for its block and cyclic distributions, and the same
//! whatever node ids the host registered.

#![forbid(unsafe_code)]

use std::fmt::Write;

/// Where the server stores the vector (`Realm::Meta` of the job table: never a PMIx answer, so
/// PMIx_Get answers stay those of a store without it).
pub const META_KEY: &str = "rshm.anlmap";

/// Longest vector stored: a map of scattered ranks (a triple per rank) past this is left to the
/// clients to build, rather than growing every job table by megabytes.
pub const MAX_LEN: usize = 1 << 20;

/// The vector of a job whose rank `r` runs on node `node_of_rank[r]` (any node ids: renumbered
/// by first rank). None when a rank has no node (`u32::MAX`), the job is empty, or the vector
/// would be longer than `max_len` bytes.
pub fn vector(node_of_rank: &[u32], max_len: usize) -> Option<String> {
    if node_of_rank.is_empty() || node_of_rank.contains(&u32::MAX) {
        return None;
    }
    // Node index by first rank: a table when the ids are dense (the server's node indexes),
    // a map otherwise.
    let max = node_of_rank.iter().copied().max().unwrap_or(0) as usize;
    let mut next = 0u32;
    let node: Vec<u32> = if max <= node_of_rank.len().saturating_mul(4) + 1024 {
        let mut index = vec![u32::MAX; max + 1];
        node_of_rank
            .iter()
            .map(|&n| {
                let slot = &mut index[n as usize];
                if *slot == u32::MAX {
                    *slot = next;
                    next += 1;
                }
                *slot
            })
            .collect()
    } else {
        let mut index = std::collections::HashMap::new();
        node_of_rank
            .iter()
            .map(|&n| {
                *index.entry(n).or_insert_with(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    };
    // The run of consecutive ranks from `r` on `r`'s node.
    let run = |r: usize| node[r..].iter().take_while(|&&n| n == node[r]).count();
    let mut out = String::from("(vector");
    let mut offset = 0;
    while offset < node.len() {
        let start = node[offset];
        let depth = run(offset);
        let (mut count, mut mapped) = (1u32, depth);
        while let Some(&n) = node.get(offset + mapped) {
            if n != start + count || run(offset + mapped) != depth {
                break;
            }
            count += 1;
            mapped += depth;
        }
        write!(out, ",({start},{count},{depth})").expect("a String grows");
        if out.len() > max_len {
            return None;
        }
        offset += mapped;
    }
    out.push(')');
    (out.len() <= max_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(nodes: &[u32]) -> Option<String> {
        vector(nodes, MAX_LEN)
    }

    #[test]
    fn one_node() {
        assert_eq!(v(&[0, 0, 0, 0]).as_deref(), Some("(vector,(0,1,4))"));
        assert_eq!(v(&[7]).as_deref(), Some("(vector,(0,1,1))"));
    }

    #[test]
    fn block_and_cyclic() {
        assert_eq!(v(&[0, 0, 1, 1, 2, 2]).as_deref(), Some("(vector,(0,3,2))"));
        // Uneven blocks: a new triple where the depth changes.
        assert_eq!(
            v(&[0, 0, 0, 1, 1, 1, 2, 2]).as_deref(),
            Some("(vector,(0,2,3),(2,1,2))")
        );
        assert_eq!(
            v(&[0, 1, 0, 1]).as_deref(),
            Some("(vector,(0,2,1),(0,2,1))")
        );
    }

    #[test]
    fn node_ids_are_renumbered_by_first_rank() {
        assert_eq!(v(&[9, 9, 4, 4]), v(&[0, 0, 1, 1]));
        assert_eq!(
            v(&[3, 5, 3, 5]).as_deref(),
            Some("(vector,(0,2,1),(0,2,1))")
        );
        // Sparse ids (the map, not the table).
        assert_eq!(v(&[1 << 30, 1 << 30, 5, 5]), v(&[0, 0, 1, 1]));
    }

    #[test]
    fn unmapped_empty_or_too_long_is_none() {
        assert_eq!(v(&[]), None);
        assert_eq!(v(&[0, u32::MAX]), None);
        let scattered: Vec<u32> = (0..1000).map(|r| r % 2).collect();
        assert!(v(&scattered).is_some());
        assert_eq!(vector(&scattered, 100), None);
    }
}
