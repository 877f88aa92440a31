//! The read-ahead: the proc arrays read on several threads ahead of pass 2, each a rank's
//! proc-column values stored straight into the columns and its other values archived as a
//! sorted run ([`ReadAhead`]); arrays it cannot read so are left to pass 2's general walk.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::input::{Ahead, RegInfo, PREFETCH_ARRAY, PREFETCH_ELEMS, PREFETCH_INFO};
use crate::bytes::same_bytes;
use crate::jobdata::columns::{COLUMN_KEYS, NODEID_COLUMN};
use crate::jobdata::keys;
use crate::layout::{Realm, COLUMN_KINDS};
use crate::raw::shared_u32s;
use crate::sync::{AtomicU32, Ordering};
use crate::table::bulk::{append_stored, byte_order, last_wins, run_loc, BulkEntry, SortedRun};
use crate::table::check_key;

/// Which node each rank is on and each node's hostname: what a proc array's hostname is
/// compared with. Read by every thread of the read-ahead.
pub(super) struct Nodes<'l> {
    /// Hostname of node `id`, for the ids `0..len` (the node map's, the common case).
    pub(super) hosts: &'l [&'l str],
    /// The hostnames node arrays give where the node map has none or another.
    pub(super) host_of_node: &'l HashMap<u32, String>,
    /// The maps' node of each rank (`u32::MAX`: none).
    pub(super) node_of_rank: &'l [u32],
}

impl Nodes<'_> {
    pub(super) fn host(&self, node: u32) -> Option<&str> {
        match self.hosts.get(node as usize) {
            Some(h) => Some(*h),
            None => self.host_of_node.get(&node).map(String::as_str),
        }
    }

    /// The node of rank `r`: the proc array's own PMIX_NODEID (`given`), else the maps'.
    pub(super) fn of_rank(&self, r: u32, given: Option<u32>) -> Option<u32> {
        given.or_else(|| {
            self.node_of_rank
                .get(r as usize)
                .copied()
                .filter(|&n| n != u32::MAX)
        })
    }
}

/// What the read-ahead made of one proc array.
#[derive(Clone, Copy, Debug)]
pub(super) enum ProcRead {
    /// The common case: every element the rank (once), a proc column key with a value of its
    /// column's type, a hostname (once), or another key. The column values are stored in the
    /// columns already; how many of the block's extras (the other keys' values, and a hostname
    /// that is not the node's, archived, in array order: [`BlockExtras`]) are this array's.
    Columns { rank: u32, extras: u32 },
    /// Anything else (a repeated rank or hostname, a column key of another type, a rank past
    /// the columns, anything malformed): pass 2 walks the array itself, and finds the error if
    /// there is one.
    General,
}

/// A [`ProcRead`] as the read-ahead stores it: all zeros is [`ProcRead::General`], else the
/// rank + 1 and the extras count. Zeros so that the million of them come from `calloc`: pages
/// the reading threads fault in as they fill them, not the calling thread up front.
pub(super) type PackedRead = [u32; 2];

impl ProcRead {
    fn pack(self) -> PackedRead {
        match self {
            // A read rank is below the job's size, a u32: rank + 1 fits.
            ProcRead::Columns { rank, extras } => [rank + 1, extras],
            ProcRead::General => [0, 0],
        }
    }

    pub(super) fn unpack(p: &PackedRead) -> ProcRead {
        match p[0] {
            0 => ProcRead::General,
            r => ProcRead::Columns {
                rank: r - 1,
                extras: p[1],
            },
        }
    }
}

/// A proc array's element, as the read-ahead sorts it.
pub(super) enum ProcKey {
    Rank,
    Hostname,
    Column(usize),
    Other,
}

pub(super) fn proc_key(key: &str) -> ProcKey {
    let k = key.as_bytes();
    if same_bytes(k, keys::RANK.as_bytes()) {
        return ProcKey::Rank;
    }
    if same_bytes(k, keys::HOSTNAME.as_bytes()) {
        return ProcKey::Hostname;
    }
    match COLUMN_KEYS.iter().position(|c| same_bytes(k, c.as_bytes())) {
        Some(c) => ProcKey::Column(c),
        None => ProcKey::Other,
    }
}

/// The extras of one block of proc arrays, archived by the thread that read it: proc-realm
/// entries as a [`SortedRun`] holds them, keyed by the block's own key ids.
#[derive(Default)]
pub(super) struct BlockExtras {
    /// The block's keys (a handful: the keys a host adds to every rank).
    pub(super) keys: Vec<Box<str>>,
    /// Class of the proc realm, id the rank, `kid` into `keys`, `loc` a [`run_loc`] in the
    /// reading thread's arena.
    pub(super) entries: Vec<BulkEntry>,
}

/// Distinct extra keys a block may have before its arrays are left to the general walk (a key
/// is found by a linear search).
pub(super) const BLOCK_KEYS_MAX: usize = 64;

/// Where one thread of the read-ahead puts what it reads.
pub(super) struct BlockReader<'x, 'a, I> {
    /// This thread's index: the arena index of its extras.
    thread: usize,
    arena: &'x mut Vec<u8>,
    block: &'x mut BlockExtras,
    /// The elements of the array being read that become extras.
    scratch: &'x mut Vec<&'a I>,
    /// The proc columns, shared by the reading threads (each `ranks` long, values inverted).
    cols: &'x [&'x [AtomicU32]; COLUMN_KINDS.len()],
    /// The columns this thread stored a value into.
    given: u32,
}

impl<'a, I: RegInfo> BlockReader<'_, 'a, I> {
    /// Read one proc array as [`Apply::proc_array`](super::apply::Apply::proc_array) would store it: a [`ProcRead::Columns`],
    /// its extras archived, or [`ProcRead::General`] (and nothing kept).
    fn proc(&mut self, info: &'a I, nodes: &Nodes, ranks: u32) -> ProcRead {
        let (entries, bytes) = (self.block.entries.len(), self.arena.len());
        self.scratch.clear();
        let read = read_columns(info, nodes, ranks, self.scratch)
            .and_then(|(rank, cols)| self.archive(rank).map(|()| (rank, cols)));
        match read {
            Some((rank, cols)) => {
                for (c, &v) in cols.iter().enumerate() {
                    if v != u32::MAX {
                        // In the columns' bounds: read_columns keeps ranks below `ranks`.
                        // Inverted, as `TableBuilder::take_columns` hands them out.
                        self.cols[c][rank as usize].store(!v, Ordering::Relaxed);
                        self.given |= 1 << c;
                    }
                }
                ProcRead::Columns {
                    rank,
                    extras: (self.block.entries.len() - entries) as u32,
                }
            }
            None => {
                self.block.entries.truncate(entries);
                self.arena.truncate(bytes);
                ProcRead::General
            }
        }
    }

    /// Archive the extras in `scratch` as `rank`'s, as [`TableBuilder::insert`](crate::table::TableBuilder::insert) stores them;
    /// None if one would be refused (the general walk then says why).
    fn archive(&mut self, rank: u32) -> Option<()> {
        for i in self.scratch.iter() {
            let key = i.key();
            check_key(key).ok()?;
            let kid = match self.block.keys.iter().position(|k| **k == *key) {
                Some(k) => k,
                None if self.block.keys.len() < BLOCK_KEYS_MAX => {
                    self.block.keys.push(key.into());
                    self.block.keys.len() - 1
                }
                None => return None,
            };
            let off = self.arena.len();
            let flags = append_stored(self.arena, &*i.value().ok()?).ok()?;
            self.block.entries.push(BulkEntry {
                class: PROC_CLASS,
                flags,
                id: rank,
                kid: kid as u32,
                len: u32::try_from(self.arena.len() - off).ok()?,
                loc: run_loc(self.thread, off),
            });
        }
        Some(())
    }
}

pub(super) const PROC_CLASS: u16 = Realm::Proc(0).class_id().0;
/// A run that evicts nothing of other classes ([`TableBuilder::merge_run`](crate::table::TableBuilder::merge_run)'s `group`).
#[allow(clippy::reversed_empty_ranges)]
pub(super) const NO_GROUP: std::ops::RangeInclusive<u16> = 1..=0;

/// The rank and column values of a proc array, its extras' elements pushed to `extras`; None
/// when the array is not [`ProcRead::Columns`]'s kind.
pub(super) fn read_columns<'a, I: RegInfo>(
    info: &'a I,
    nodes: &Nodes,
    ranks: u32,
    extras: &mut Vec<&'a I>,
) -> Option<(u32, [u32; COLUMN_KINDS.len()])> {
    let mut cols = [u32::MAX; COLUMN_KINDS.len()];
    let (mut rank, mut node, mut host) = (None, None, None);
    for i in info.infos()? {
        match proc_key(i.key()) {
            // A rank that is a number passes `RegInfo::check` (an integer scalar).
            ProcKey::Rank if rank.is_none() => rank = Some(i.number()?),
            ProcKey::Hostname if host.is_none() => host = Some(i),
            ProcKey::Column(c) => {
                let v = i.column(COLUMN_KINDS[c])?;
                if c == NODEID_COLUMN && node.is_none() {
                    node = Some(v);
                }
                cols[c] = v;
            }
            ProcKey::Other => extras.push(i),
            ProcKey::Rank | ProcKey::Hostname => return None,
        }
    }
    let rank = rank.filter(|&r| r < ranks)?;
    // A hostname equal to the rank's node's is read through the node; any other is stored.
    if let Some(h) = host {
        let node_host = nodes.of_rank(rank, node).and_then(|n| nodes.host(n));
        if h.string().is_none() || h.string() != node_host {
            extras.push(h);
        }
    }
    Some((rank, cols))
}

/// Proc arrays a thread of the read-ahead takes at a time.
pub(super) const READ_BLOCK: usize = 4096;
/// Threads the read-ahead uses at most (the calling one included).
pub(super) const READ_THREADS: usize = 4;

/// Threads beside the calling one that a walk over `n` infos uses: none for a small
/// registration or a process allowed one core.
pub(super) fn helper_threads(n: usize) -> usize {
    if n <= READ_BLOCK {
        return 0;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads.min(READ_THREADS) - 1
}

/// What the read-ahead read: a [`ProcRead`] per proc array, per block the extras its
/// [`ProcRead::Columns`] count (in order), and per thread the arena of their values.
pub(super) struct ReadAhead {
    pub(super) reads: Vec<PackedRead>,
    pub(super) extras: Vec<BlockExtras>,
    pub(super) arenas: Vec<Vec<u8>>,
    /// The columns a [`ProcRead::Columns`] stored a value into.
    pub(super) given: u32,
}

impl ReadAhead {
    /// Whether the extras can be merged as one run: every proc array is a
    /// [`ProcRead::Columns`] and no rank has two (else the order of the arrays decides which
    /// value stays, and they are applied one by one).
    pub(super) fn mergeable(&self, ranks: u32) -> bool {
        let mut seen = vec![0u64; (ranks as usize).div_ceil(64)];
        for read in &self.reads {
            let ProcRead::Columns { rank, .. } = ProcRead::unpack(read) else {
                return false;
            };
            let (word, bit) = (rank as usize / 64, 1u64 << (rank % 64));
            if seen[word] & bit != 0 {
                return false;
            }
            seen[word] |= bit;
        }
        true
    }

    /// The extras as one run: the blocks' keys made one table, entries sorted by (rank, key
    /// bytes), the later of two values of a rank's key kept.
    pub(super) fn into_run(self) -> SortedRun {
        let mut keys: Vec<Box<str>> = Vec::new();
        let mut key_ids: HashMap<Box<str>, u32> = HashMap::new();
        let mut entries = Vec::with_capacity(self.extras.iter().map(|b| b.entries.len()).sum());
        for block in self.extras {
            let map: Vec<u32> = block
                .keys
                .into_iter()
                .map(|k| {
                    *key_ids.entry(k).or_insert_with_key(|k| {
                        keys.push(k.clone());
                        keys.len() as u32 - 1
                    })
                })
                .collect();
            entries.extend(block.entries.into_iter().map(|mut e| {
                e.kid = map[e.kid as usize];
                e
            }));
        }
        // A rank's key given twice keeps its later value (the stable sort keeps array order).
        let order = byte_order(&keys);
        let pos = |e: &BulkEntry| ((e.id as u64) << 32) | order[e.kid as usize] as u64;
        let (entries, wasted) = last_wins(entries, pos);
        SortedRun {
            keys,
            entries,
            arenas: self.arenas,
            wasted,
        }
    }
}

/// Read the proc arrays `procs` ahead of pass 2, on the threads this process may use, while
/// the calling thread runs `beside` and then joins in. The walk over a million proc arrays is
/// the registration's memory-bound part; what pass 2 does with a [`ProcRead::Columns`] is a
/// few stores, and the extras' values are archived here too. Small registrations, or a process
/// allowed one core, read on the calling thread.
pub(super) fn read_ahead<I: RegInfo, R>(
    procs: &[&I],
    nodes: &Nodes,
    cols: &mut [Vec<u32>; COLUMN_KINDS.len()],
    ranks: u32,
    beside: impl FnOnce() -> R,
) -> (ReadAhead, R) {
    let mut reads: Vec<PackedRead> = vec![[0; 2]; procs.len()];
    let cols = cols.each_mut().map(|c| shared_u32s(c));
    let helpers = helper_threads(procs.len());
    let blocks = Mutex::new(reads.chunks_mut(READ_BLOCK).enumerate());
    let extras = Mutex::new(Vec::new());
    let read = |thread: usize| {
        let (mut arena, mut scratch, mut given) = (Vec::new(), Vec::new(), 0);
        loop {
            let next = blocks.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((b, out)) = next else {
                break;
            };
            let mut block = BlockExtras::default();
            let mut reader = BlockReader {
                thread,
                arena: &mut arena,
                block: &mut block,
                scratch: &mut scratch,
                cols: &cols,
                given,
            };
            // Ahead of the walk runs into the next block: no stall at a block's start.
            let from = &procs[b * READ_BLOCK..];
            let mut ahead_info = from.iter().skip(PREFETCH_INFO);
            let mut ahead_array = from.iter().skip(PREFETCH_ARRAY);
            let mut ahead_elems = from.iter().skip(PREFETCH_ELEMS);
            for (info, out) in from.iter().zip(out) {
                if let Some(i) = ahead_info.next() {
                    i.prefetch(Ahead::Info);
                }
                if let Some(i) = ahead_array.next() {
                    i.prefetch(Ahead::Array);
                }
                if let Some(i) = ahead_elems.next() {
                    i.prefetch(Ahead::Elements);
                }
                *out = reader.proc(*info, nodes, ranks).pack();
            }
            given = reader.given;
            if !block.entries.is_empty() {
                let mut all = extras.lock().unwrap_or_else(PoisonError::into_inner);
                all.push((b, block));
            }
        }
        (arena, given)
    };
    let (arenas, r) = std::thread::scope(|s| {
        // A thread that cannot be started (a process at its thread limit) is done without: the
        // others, this one included, read its blocks.
        let started: Vec<_> = (1..=helpers)
            .filter_map(|t| {
                let thread = std::thread::Builder::new().name("rshm-register".into());
                thread.spawn_scoped(s, move || read(t)).ok().map(|h| (t, h))
            })
            .collect();
        let r = beside();
        let mut arenas = vec![Vec::new(); helpers + 1];
        let (arena, mut given) = read(0);
        arenas[0] = arena;
        for (t, h) in started {
            // A reading thread does not panic but by a bug; pass it on.
            let (arena, g) = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            arenas[t] = arena;
            given |= g;
        }
        (arenas, (r, given))
    });
    let (r, given) = r;
    let mut per_block: Vec<BlockExtras> = (0..reads.len().div_ceil(READ_BLOCK))
        .map(|_| BlockExtras::default())
        .collect();
    for (b, e) in extras.into_inner().unwrap_or_else(PoisonError::into_inner) {
        per_block[b] = e;
    }
    (
        ReadAhead {
            reads,
            extras: per_block,
            arenas,
            given,
        },
        r,
    )
}
