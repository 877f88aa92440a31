//! From a registration info array (what `PMIx_server_register_nspace` receives, assembled as the
//! standard's 17.2.3.2 describes) to a table: realms sorted out at write time, the keys a server
//! must answer derived from the node and process maps, the standard per-rank keys in proc
//! columns. docs/jobdata.md lists what is derived and what is stored where.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::keys::{self, default_realm, meta, DefaultRealm};
use super::maps::{parse_node_map, parse_proc_map};
use crate::bytes::same_bytes;
use crate::error::{Error, Result};
use crate::layout::{ColumnKind, Realm, COLUMNS, NODEID_COLUMN};
use crate::prefault::Prefault;
use crate::raw::{prefetch, shared_u32s};
use crate::sync::{AtomicU32, Ordering};
use crate::table::{
    append_stored, byte_order, check_key, column_value, last_wins, run_loc, value_in, BulkEntry,
    SortedRun, TableBuilder,
};
use crate::value::{types, Info, Value};

mod node_realm;

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

/// One element of a registration array as the registration reads it: a Rust [`Info`], or an
/// element of a C `pmix_info_t` array read in place (the C ABI's validated view), so that a
/// million proc arrays are walked where they lie instead of being converted first. `Sync`: the
/// proc arrays are read by several threads at once (the source is not changed meanwhile).
pub trait RegInfo: Sized + Sync {
    /// The elements of an info array.
    type Elems<'a>: Iterator<Item = &'a Self> + Clone
    where
        Self: 'a;
    /// The key.
    fn key(&self) -> &str;
    /// The elements, if the value is an info array (a data array of PMIX_INFO).
    fn infos(&self) -> Option<Self::Elems<'_>>;
    /// The string of a PMIX_STRING value.
    fn string(&self) -> Option<&str>;
    /// The string of a string-like value: PMIX_STRING, or PMIX_REGEX / byte-object bytes up to
    /// their NUL (maps arrive as either).
    fn text(&self) -> Option<&str>;
    /// A non-negative integer value that fits a u32 (ids and ranks arrive with varying types).
    fn number(&self) -> Option<u32>;
    /// The value, to store.
    fn value(&self) -> Result<Cow<'_, Value>>;
    /// The value as proc column `kind` holds it: a value of the column's type that is not its
    /// absent pattern, as [`TableBuilder::insert`] would store it in the column. Sources that can read it
    /// without making a [`Value`] say so: a million proc arrays ask it eight times each.
    fn column(&self, kind: ColumnKind) -> Option<u32> {
        column_value(kind, &*self.value().ok()?)
    }
    /// Whether the element is well-formed, for sources that leave that to the walk (a C array,
    /// read in place unchecked): called on the elements of a proc or node array that are not
    /// stored nor read otherwise. Every other element is checked by what reads it:
    /// [`RegInfo::value`] for what is stored, [`RegInfo::infos`], [`RegInfo::text`],
    /// [`RegInfo::number`] or [`RegInfo::string`] for what pass 1 or the read-ahead reads.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// A hint that the element will be read soon (a C array's proc arrays lie far apart in
    /// memory, and a million-element walk outruns the hardware prefetcher): told three times
    /// as the walk approaches, each stage reading only what the one before asked for.
    fn prefetch(&self, _ahead: Ahead) {}
}

/// How far ahead of the walk an element is when [`RegInfo::prefetch`] is told about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// Telling the top level's proc arrays apart ([`PREFETCH_INFO`] elements ahead): the
    /// element's key only.
    Key,
    /// Farthest ([`PREFETCH_INFO`] elements): the element itself, its key and its value.
    Info,
    /// [`PREFETCH_ARRAY`] elements: what its value points to (an info array's header).
    Array,
    /// Nearest ([`PREFETCH_ELEMS`] elements): the elements of that array.
    Elements,
}

/// Elements ahead of the walk at each [`Ahead`] stage. One proc array of 8 infos is ~17 cache
/// lines, about what a core tracks in flight: asking for more arrays at once drops requests
/// (1M C registration, the whole build as pass 2's distances vary: 16/8/4 ahead 520-600 ms,
/// 6/3/1 430-470 ms, none 660-770 ms; docs/performance.md).
pub const PREFETCH_INFO: usize = 6;
pub const PREFETCH_ARRAY: usize = 3;
pub const PREFETCH_ELEMS: usize = 1;

type InfoElems<'a> = std::iter::FilterMap<std::slice::Iter<'a, Value>, fn(&Value) -> Option<&Info>>;

fn as_info(v: &Value) -> Option<&Info> {
    match v {
        Value::Info(info) => Some(info),
        _ => None,
    }
}

impl RegInfo for Info {
    type Elems<'a> = InfoElems<'a>;

    fn key(&self) -> &str {
        &self.key
    }

    fn infos(&self) -> Option<InfoElems<'_>> {
        match &self.value {
            Value::DataArray(a) if a.elem_type == types::INFO => Some(
                a.items
                    .iter()
                    .filter_map(as_info as fn(&Value) -> Option<&Info>),
            ),
            _ => None,
        }
    }

    fn string(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn text(&self) -> Option<&str> {
        text(&self.value)
    }

    fn number(&self) -> Option<u32> {
        number(&self.value)
    }

    fn value(&self) -> Result<Cow<'_, Value>> {
        Ok(Cow::Borrowed(&self.value))
    }

    /// An info array's three allocations in turn: its `DataArray`, the elements' buffer, the
    /// elements (each its own box).
    fn prefetch(&self, ahead: Ahead) {
        match (ahead, &self.value) {
            (Ahead::Key, _) => prefetch(self.key.as_ptr()),
            (Ahead::Info, Value::DataArray(a)) => prefetch(&**a),
            (Ahead::Array, Value::DataArray(a)) => prefetch(a.items.as_ptr()),
            (Ahead::Elements, Value::DataArray(a)) => {
                for v in a.items.iter().take(16) {
                    if let Value::Info(i) = v {
                        prefetch(&**i);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The string of a string-like value (maps arrive as PMIX_STRING or PMIX_REGEX bytes).
pub fn text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Regex(b) | Value::ByteObject(b) => text_of_bytes(b),
        _ => None,
    }
}

/// Bytes up to their first NUL as a string, if UTF-8.
pub fn text_of_bytes(b: &[u8]) -> Option<&str> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).ok()
}

/// A non-negative integer value that fits a u32 (ids and ranks arrive with varying types).
pub fn number(v: &Value) -> Option<u32> {
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

/// The elements of an info-array value, walked in place.
fn infos_of<I: RegInfo>(info: &I) -> Result<I::Elems<'_>> {
    info.infos()
        .ok_or_else(|| bad(format!("{} must be an array of pmix_info_t", info.key())))
}

/// Pass 1: what must be known before anything is stored (the maps, the session, the nodes).
struct Layout<'a, I> {
    session_id: Option<u32>,
    hosts: Vec<String>,
    per_node: Vec<Vec<u32>>,
    /// Node arrays: (node id if given, hostname if given).
    node_arrays: Vec<(Option<u32>, Option<&'a str>)>,
    registered_size: Option<u32>,
    /// The proc arrays, at any level, in order.
    proc_arrays: Vec<&'a I>,
    /// Everything else pass 2 applies, in order, with whether it is inside a session array:
    /// the infos outside session and job arrays and inside them, not the arrays themselves.
    ops: Vec<(&'a I, bool)>,
}

/// The first element of an array with key `key`.
fn member<'a, I: RegInfo + 'a>(items: impl Iterator<Item = &'a I>, key: &str) -> Option<&'a I> {
    items.into_iter().find(|i| i.key() == key)
}

/// The identifying number `key` (named `name` in errors) of the array `what`.
fn required_number<'a, I: RegInfo + 'a>(
    items: impl Iterator<Item = &'a I>,
    key: &str,
    name: &str,
    what: &str,
) -> Result<u32> {
    let v = member(items, key).ok_or_else(|| bad(format!("{what} without {name}")))?;
    v.number()
        .ok_or_else(|| bad(format!("{name} in {what} must be a non-negative number")))
}

impl<'a, I: RegInfo + 'a> Layout<'a, I> {
    /// For a top-level array of `n` infos: nearly all of them proc arrays at scale, a list
    /// reserved once rather than grown (each doubling a copy into fresh pages).
    fn new(n: usize) -> Self {
        Layout {
            session_id: None,
            hosts: Vec::new(),
            per_node: Vec::new(),
            node_arrays: Vec::new(),
            registered_size: None,
            proc_arrays: Vec::with_capacity(n),
            ops: Vec::new(),
        }
    }

    /// One past the highest rank with a proc array.
    fn proc_end(&self) -> Result<Option<u32>> {
        let mut end = None;
        for info in &self.proc_arrays {
            let r = required_number(infos_of(*info)?, keys::RANK, "PMIX_RANK", "a proc array")?;
            end = Some(end.unwrap_or(0).max(r.saturating_add(1)));
        }
        Ok(end)
    }

    /// The top level: the proc arrays told apart first ([`proc_arrays_among`], on every core
    /// at scale), then everything else scanned in order.
    fn scan_top(&mut self, infos: &'a [I]) -> Result<()> {
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
            self.ops.push((info, session));
        }
        match key {
            keys::SESSION_INFO_ARRAY => self.scan(infos_of(info)?, true, depth + 1)?,
            keys::JOB_INFO_ARRAY => self.scan(infos_of(info)?, false, depth + 1)?,
            keys::APP_INFO_ARRAY => {
                required_number(infos_of(info)?, keys::APPNUM, "PMIX_APPNUM", "an app array")?;
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

/// Job and session arrays nested deeper than this are refused.
const NESTING_MAX: usize = 32;

/// Whether an info is a proc array, by its key alone (its value is checked where it is read).
fn is_proc_array<I: RegInfo>(info: &I) -> bool {
    same_bytes(info.key().as_bytes(), keys::PROC_INFO_ARRAY.as_bytes())
}

/// Which top-level infos are proc arrays. At scale this is the first read of a million infos
/// 552 bytes apart in the caller's memory (a C array's), so it runs on the threads the
/// read-ahead uses, each taking blocks of [`READ_BLOCK`] infos: on a VM a first read of
/// memory the caller wrote can cost several times a second one (docs/performance.md), and two
/// cores take that in half the time.
fn proc_arrays_among<I: RegInfo>(infos: &[I]) -> Vec<bool> {
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

/// Threads beside the calling one that a walk over `n` infos uses: none for a small
/// registration or a process allowed one core.
fn helper_threads(n: usize) -> usize {
    if n <= READ_BLOCK {
        return 0;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads.min(READ_THREADS) - 1
}

/// Which node each rank is on and each node's hostname: what a proc array's hostname is
/// compared with. Read by every thread of the read-ahead.
struct Nodes<'l> {
    /// Hostname of node `id`, for the ids `0..len` (the node map's, the common case).
    hosts: &'l [&'l str],
    /// The hostnames node arrays give where the node map has none or another.
    host_of_node: &'l HashMap<u32, String>,
    /// The maps' node of each rank (`u32::MAX`: none).
    node_of_rank: &'l [u32],
}

impl Nodes<'_> {
    fn host(&self, node: u32) -> Option<&str> {
        match self.hosts.get(node as usize) {
            Some(h) => Some(*h),
            None => self.host_of_node.get(&node).map(String::as_str),
        }
    }

    /// The node of rank `r`: the proc array's own PMIX_NODEID (`given`), else the maps'.
    fn of_rank(&self, r: u32, given: Option<u32>) -> Option<u32> {
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
enum ProcRead {
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
type PackedRead = [u32; 2];

impl ProcRead {
    fn pack(self) -> PackedRead {
        match self {
            // A read rank is below the job's size, a u32: rank + 1 fits.
            ProcRead::Columns { rank, extras } => [rank + 1, extras],
            ProcRead::General => [0, 0],
        }
    }

    fn unpack(p: &PackedRead) -> ProcRead {
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
enum ProcKey {
    Rank,
    Hostname,
    Column(usize),
    Other,
}

fn proc_key(key: &str) -> ProcKey {
    let k = key.as_bytes();
    if same_bytes(k, keys::RANK.as_bytes()) {
        return ProcKey::Rank;
    }
    if same_bytes(k, keys::HOSTNAME.as_bytes()) {
        return ProcKey::Hostname;
    }
    match COLUMNS.iter().position(|c| same_bytes(k, c.key.as_bytes())) {
        Some(c) => ProcKey::Column(c),
        None => ProcKey::Other,
    }
}

/// The extras of one block of proc arrays, archived by the thread that read it: proc-realm
/// entries as a [`SortedRun`] holds them, keyed by the block's own key ids.
#[derive(Default)]
struct BlockExtras {
    /// The block's keys (a handful: the keys a host adds to every rank).
    keys: Vec<Box<str>>,
    /// Class of the proc realm, id the rank, `kid` into `keys`, `loc` a [`run_loc`] in the
    /// reading thread's arena.
    entries: Vec<BulkEntry>,
}

/// Distinct extra keys a block may have before its arrays are left to the general walk (a key
/// is found by a linear search).
const BLOCK_KEYS_MAX: usize = 64;

/// Where one thread of the read-ahead puts what it reads.
struct BlockReader<'x, 'a, I> {
    /// This thread's index: the arena index of its extras.
    thread: usize,
    arena: &'x mut Vec<u8>,
    block: &'x mut BlockExtras,
    /// The elements of the array being read that become extras.
    scratch: &'x mut Vec<&'a I>,
    /// The proc columns, shared by the reading threads (each `ranks` long, values inverted).
    cols: &'x [&'x [AtomicU32]; COLUMNS.len()],
    /// The columns this thread stored a value into.
    given: u32,
}

impl<'a, I: RegInfo> BlockReader<'_, 'a, I> {
    /// Read one proc array as [`Apply::proc_array`] would store it: a [`ProcRead::Columns`],
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

    /// Archive the extras in `scratch` as `rank`'s, as [`TableBuilder::insert`] stores them;
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

const PROC_CLASS: u16 = Realm::Proc(0).class_id().0;
/// A run that evicts nothing of other classes ([`TableBuilder::merge_run`]'s `group`).
#[allow(clippy::reversed_empty_ranges)]
const NO_GROUP: std::ops::RangeInclusive<u16> = 1..=0;

/// The rank and column values of a proc array, its extras' elements pushed to `extras`; None
/// when the array is not [`ProcRead::Columns`]'s kind.
fn read_columns<'a, I: RegInfo>(
    info: &'a I,
    nodes: &Nodes,
    ranks: u32,
    extras: &mut Vec<&'a I>,
) -> Option<(u32, [u32; COLUMNS.len()])> {
    let mut cols = [u32::MAX; COLUMNS.len()];
    let (mut rank, mut node, mut host) = (None, None, None);
    for i in info.infos()? {
        match proc_key(i.key()) {
            // A rank that is a number passes `RegInfo::check` (an integer scalar).
            ProcKey::Rank if rank.is_none() => rank = Some(i.number()?),
            ProcKey::Hostname if host.is_none() => host = Some(i),
            ProcKey::Column(c) => {
                let v = i.column(COLUMNS[c].kind)?;
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
const READ_BLOCK: usize = 4096;
/// Threads the read-ahead uses at most (the calling one included).
const READ_THREADS: usize = 4;

/// What the read-ahead read: a [`ProcRead`] per proc array, per block the extras its
/// [`ProcRead::Columns`] count (in order), and per thread the arena of their values.
struct ReadAhead {
    reads: Vec<PackedRead>,
    extras: Vec<BlockExtras>,
    arenas: Vec<Vec<u8>>,
    /// The columns a [`ProcRead::Columns`] stored a value into.
    given: u32,
}

impl ReadAhead {
    /// Whether the extras can be merged as one run: every proc array is a
    /// [`ProcRead::Columns`] and no rank has two (else the order of the arrays decides which
    /// value stays, and they are applied one by one).
    fn mergeable(&self, ranks: u32) -> bool {
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
    fn into_run(self) -> SortedRun {
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
fn read_ahead<I: RegInfo, R>(
    procs: &[&I],
    nodes: &Nodes,
    cols: &mut [Vec<u32>; COLUMNS.len()],
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

/// A [`ProcRead::Columns`] row's column values stored (`u32::MAX`: not given).
fn set_row(t: &mut TableBuilder, rank: u32, cols: &[u32; COLUMNS.len()]) {
    for (c, &v) in cols.iter().enumerate() {
        if v != u32::MAX {
            t.set_column(c, rank, v);
        }
    }
}

/// Pass 2: everything the host registered, stored over what was derived.
struct Apply<'l> {
    session_id: u32,
    node_ids: &'l HashMap<String, u32>,
    nodes: Nodes<'l>,
}

impl Apply<'_> {
    /// One info of pass 1's `ops` (`session`: inside a session array). A node array is only
    /// told its node and pushed to `node_arrays`, for [`node_realm::node_run`].
    fn op<'i, I: RegInfo>(
        &self,
        t: &mut TableBuilder,
        info: &'i I,
        session: bool,
        node_arrays: &mut Vec<(u32, &'i I)>,
    ) -> Result<()> {
        let key = info.key();
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
                node_arrays.push((id, info));
            }
            keys::NODE_MAP | keys::NODE_MAP_RAW | keys::PROC_MAP | keys::PROC_MAP_RAW => {}
            keys::SESSION_ID if session => {}
            _ if session || default_realm(key) == DefaultRealm::Session => {
                t.insert(Realm::Session(self.session_id), key, &*info.value()?)?;
            }
            _ => t.insert(Realm::Job, key, &*info.value()?)?,
        }
        Ok(())
    }

    /// The read-ahead's proc arrays applied one by one in document order: a row's columns
    /// and extras, a general array walked.
    fn in_order<I: RegInfo>(
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

/// The job-realm keys OpenPMIx 4.2.2 answers from the node and process maps alone: the job's
/// size and nodes, and the local size, leader and peers of the store's own node (each node's
/// are [`node_realm`]'s, each rank's [`derive_columns`]'; docs/jobdata.md).
fn derive(
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
        let sorted = sorted_ranks(ranks);
        if let Some(&leader) = sorted.first() {
            t.insert(
                Realm::Job,
                keys::LOCAL_SIZE,
                &Value::Uint32(sorted.len() as u32),
            )?;
            t.insert(Realm::Job, keys::LOCALLDR, &Value::ProcRank(leader))?;
            t.insert(
                Realm::Job,
                keys::LOCAL_PEERS,
                &Value::String(peers_list(&sorted)),
            )?;
        }
    }
    Ok(())
}

/// A node's peers as PMIX_LOCAL_PEERS lists them: its ranks, in order, comma-separated.
fn peers_list(sorted: &[u32]) -> String {
    let mut peers = Vec::with_capacity(sorted.len() * 8);
    let mut n = Decimal::default();
    for (i, &r) in sorted.iter().enumerate() {
        if i > 0 {
            peers.push(b',');
        }
        n.set(r);
        peers.extend_from_slice(n.digits());
    }
    String::from_utf8(peers).expect("decimal digits and commas")
}

/// A node's ranks in order (the process map lists them so, as a rule).
fn sorted_ranks(ranks: &[u32]) -> Cow<'_, [u32]> {
    if ranks.is_sorted() {
        Cow::Borrowed(ranks)
    } else {
        let mut s = ranks.to_vec();
        s.sort_unstable();
        Cow::Owned(s)
    }
}

/// The per-rank keys OpenPMIx 4.2.2 answers from the process map alone: each rank's local and
/// node rank and node id (docs/jobdata.md), into the proc columns where no value is yet.
fn derive_columns(t: &mut TableBuilder, per_node: &[Vec<u32>]) -> Result<()> {
    let column = |key| TableBuilder::column_index(key).expect("a proc column key");
    let (lrank, nrank, nodeid) = (
        column(keys::LOCAL_RANK),
        column(keys::NODE_RANK),
        column(keys::NODEID),
    );
    for (i, ranks) in per_node.iter().enumerate() {
        let node = i as u32;
        for (local, &r) in sorted_ranks(ranks).iter().enumerate() {
            // Below 65536: `derive` refused larger nodes.
            let local = local as u32;
            t.insert_column_if_absent(lrank, r, local)?;
            t.insert_column_if_absent(nrank, r, local)?;
            t.insert_column_if_absent(nodeid, r, node)?;
        }
    }
    Ok(())
}

/// A number in decimal, kept as its digits: a node's ranks are mostly consecutive, and the
/// next one's digits are the last one's counted up (a million ranks' peers lists at 1M, where
/// writing each number anew cost ~19 ns, `write!` ~20 ns).
struct Decimal {
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
    let mut l = Layout::new(infos.len());
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
    let mapped: u64 = per_node.iter().map(|n| n.len() as u64).sum();
    let map_end = per_node.iter().flatten().max().map(|r| r + 1);
    let job_size = match l
        .registered_size
        .or(u32::try_from(mapped).ok().filter(|&m| m > 0))
    {
        Some(n) => n,
        // Neither registered nor mapped: the proc arrays tell.
        None => map_end.max(l.proc_end()?).unwrap_or(0),
    };

    let mut t = TableBuilder::with_ranks(job_size);
    // The node realm and the hostname index go to a run of their own: per node its id,
    // hostname, sizes, leader and peers list (~7 bytes a rank), each padded to 16 bytes, then
    // the index (~34 bytes a node). (The entries inserted one by one are a few job keys.)
    let nodes = hosts.len().max(per_node.len()).max(l.node_arrays.len());
    let node_arena: Vec<u8> = Vec::with_capacity(job_size as usize * 8 + nodes * 128);
    prefault.vec(&node_arena);
    let mut node_of_rank = Vec::with_capacity(job_size as usize);
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

    node_of_rank.resize(job_size as usize, u32::MAX);
    for (node, ranks) in per_node.iter().enumerate() {
        for &r in ranks {
            if let Some(slot) = node_of_rank.get_mut(r as usize) {
                *slot = node as u32;
            }
        }
    }
    let mut dense_hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    for (&id, h) in &host_of_node {
        if let Some(slot) = dense_hosts.get_mut(id as usize) {
            *slot = h;
        }
    }
    let apply = Apply {
        session_id,
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
    let (mut cols, present) = t.take_columns(!l.proc_arrays.is_empty());
    let (ahead, done) = read_ahead(&l.proc_arrays, &apply.nodes, &mut cols, job_size, || {
        if let Some(id) = local_nodeid {
            t.insert(Realm::Meta, meta::LOCAL_NODEID, &Value::Uint32(id))?;
        }
        derive(&mut t, hosts, per_node, job_size, local_nodeid)?;
        // What the host registered overrides what was derived.
        let mut node_arrays = Vec::with_capacity(l.node_arrays.len());
        for &(info, session) in &l.ops {
            apply.op(&mut t, info, session, &mut node_arrays)?;
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
    if ahead.mergeable(job_size) {
        // One array per rank: the columns are stored, the extras go in as one run (other
        // keys than the columns', so their order does not matter).
        if ahead.extras.iter().any(|b| !b.entries.is_empty()) {
            t.merge_run(ahead.into_run(), PROC_CLASS..=PROC_CLASS)?;
        }
    } else {
        // In document order, one by one (a rank's later array overrides its earlier one).
        apply.in_order(&mut t, &l.proc_arrays, ahead, job_size)?;
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
