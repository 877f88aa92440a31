//! The reader: any number per store, in any process, mapping segments read-only.
//!
//! A [`Reader`] holds a snapshot of one root generation and the tables it has mapped so far.
//! Threads read through a [`Pin`] (a crossbeam-epoch guard) with no lock; when the anchor names
//! a newer generation, one thread builds the next snapshot (carrying over unchanged tables) and
//! swaps it in; the old one is dropped, and its mappings released, only once no pinned thread
//! can still see it (docs/protocol.md C1/C2).

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::bytes::same_bytes;
use crate::dir::StoreDir;
use crate::error::{Error, Result};
use crate::layout::{place_in_pack, Kind, Realm, ROOT_AT_OFF, WITHDRAWN_OFF};
use crate::pins;
use crate::protocol;
use crate::raw::{CellGuard, SharedMap, SnapshotCell, WeakMap};
use crate::root::RootView;
use crate::segment::{self, table_name, ANCHOR_NAME};
use crate::table::TableView;
use crate::valueref::ValueRef;

/// Environment variable naming the store directory a client attaches to.
pub const ENV_STORE: &str = "RSHM_STORE";

/// Environment variable read once at attach: `off` makes the reader keep every generation it
/// moves past mapped for the rest of its life instead of letting it go (a leak on purpose).
/// A test-only diagnostic (docs/testing.md): the soak tests run with it to show that their
/// bounds on what readers keep mapped can fail. Only with the `test-knobs` feature.
#[cfg(feature = "test-knobs")]
pub const ENV_READER_RETIRE: &str = "RSHM_READER_RETIRE";

/// How often a reader retries when the writer unlinks a generation between our load of the
/// anchor and our open of the file (it means a newer one is already published).
const STALE_RETRIES: usize = 64;

/// A pinned thread of one [`Reader`]: values borrowed through it stay valid until it is
/// dropped, and it borrows the reader, which cannot be dropped while a pin is out.
///
/// ```compile_fail,E0505
/// # fn f(r: rshm_gds::Reader) {
/// let pin = r.pin();
/// drop(r); // the pin still borrows the reader
/// drop(pin);
/// # }
/// ```
pub struct Pin<'r> {
    guard: CellGuard,
    _reader: PhantomData<&'r Reader>,
}

/// One generation of the store as this process sees it.
/// How many (namespace, part) lookups a snapshot remembers.
/// The first lookups of a generation remembered in order ([`Snapshot::recent`]): a process's
/// own job and posted data and the server's resources, found by a scan of these alone.
const RECENT: usize = 4;

/// Bounds of a generation's lookup cache for the others ([`Snapshot::more`]), in slots: at least this many,
/// else twice the root's references rounded up to a power of two, at most `RECENT_MAX` (a
/// namespace of many ranks has a table per posting rank; a process reads a few of them).
const RECENT_MIN: usize = 8;
const RECENT_MAX: usize = 1024;
/// Slots a lookup probes from its hash's slot before it gives up on the cache.
const RECENT_PROBES: usize = 8;

/// A remembered lookup: namespace, part, root index (None: absent).
type Recent = (Box<str>, u32, Option<usize>);

/// The lookup cache of a root of `refs` references: empty slots.
fn recent_slots(refs: usize) -> Box<[OnceLock<Recent>]> {
    let n = refs
        .saturating_mul(2)
        .clamp(RECENT_MIN, RECENT_MAX)
        .next_power_of_two();
    (0..n).map(|_| OnceLock::new()).collect()
}

/// The cache slot where a lookup of (`ns`, `part`) starts: a mix of the name's length, its
/// first and last eight bytes and the part (names of one job differ at their end: `job@1`,
/// `job@2`), so that it costs the same for any name; slots compare the whole name.
#[inline]
fn recent_hash(ns: &[u8], part: u32) -> usize {
    let n = ns.len();
    let (head, tail) = match (ns.first_chunk::<8>(), ns.last_chunk::<8>()) {
        (Some(h), Some(t)) => (u64::from_le_bytes(*h), u64::from_le_bytes(*t)),
        _ => (ns.iter().fold(0u64, |w, &c| (w << 8) | u64::from(c)), 0),
    };
    let x = head ^ tail.rotate_left(29) ^ ((n as u64) << 48) ^ u64::from(part);
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize
}

struct Snapshot {
    /// The anchor's `root_at` this snapshot was loaded from (0: nothing published).
    at: u64,
    /// The root's generation.
    gen: u64,
    root: Option<RootView>,
    /// Lazily mapped tables, one slot per root reference.
    tables: Box<[OnceLock<Arc<TableView>>]>,
    /// The first few (namespace, part) asked in this generation and their root index (None:
    /// absent). A client asks about its own namespace's job data and posted data and the
    /// server's resources almost always; this skips the hash and the root's search for them,
    /// found or not.
    recent: [OnceLock<Recent>; RECENT],
    /// The others asked, open addressing on [`recent_hash`]: each is searched in the root once
    /// per generation, found or not (a reader of many peers' posted data asks a table per
    /// peer). Slots are only ever filled; a lookup that finds its probes taken by others
    /// searches the root.
    more: Box<[OnceLock<Recent>]>,
}

/// Counters for diagnostics (`rshm` CLI, benches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Root generation of the current snapshot.
    pub generation: u64,
    /// Bytes of segments mapped by the current snapshot.
    pub mapped_bytes: usize,
    /// Tables mapped by the current snapshot.
    pub mapped_tables: usize,
}

/// A read-only view of a store.
pub struct Reader {
    packs: Packs,
    anchor: SharedMap,
    current: SnapshotCell<Snapshot>,
    /// This reader's identity in the threads' registrations with `current` (`crate::pins`).
    owner: pins::Owner,
    refresh_lock: Mutex<()>,
    /// False under `RSHM_READER_RETIRE=off` ([`ENV_READER_RETIRE`]).
    #[cfg(feature = "test-knobs")]
    retire: bool,
}

/// Internal: a lookup failed because the generation it used is gone (unlinked).
enum Miss {
    Stale,
    Err(Error),
}

impl From<Error> for Miss {
    fn from(e: Error) -> Self {
        Miss::Err(e)
    }
}

/// The store directory and the packs this process maps: each pack is mapped once, shared by
/// every snapshot and table that uses it, and unmapped with the last of them.
struct Packs {
    dir: StoreDir,
    mapped: Mutex<HashMap<u32, WeakMap>>,
}

impl Packs {
    /// Pack `seq`, mapped (R2, R3 on the pack's header) unless this process maps it already.
    fn get(&self, seq: u32) -> std::result::Result<SharedMap, Miss> {
        let mut mapped = self.mapped.lock();
        if let Some(p) = mapped.get(&seq).and_then(WeakMap::upgrade) {
            return Ok(p);
        }
        let pack = match segment::open_pack(&self.dir, seq) {
            Ok(p) => p,
            Err(Error::NotFound) => return Err(Miss::Stale),
            Err(e) => return Err(Miss::Err(e)),
        };
        mapped.retain(|_, w| w.is_live());
        mapped.insert(seq, pack.downgrade());
        Ok(pack)
    }

    /// The segment at `at` (a place in a pack), of `kind`.
    fn embedded(&self, at: u64, kind: Kind) -> std::result::Result<Arc<crate::raw::RoMap>, Miss> {
        let (seq, off) = place_in_pack(at).ok_or(Error::Corrupt("a place outside any pack"))?;
        let pack = self.get(seq)?;
        Ok(segment::open_embedded(&pack, off, kind)?.0)
    }
}

impl Snapshot {
    fn empty() -> Snapshot {
        Snapshot {
            at: 0,
            gen: 0,
            root: None,
            tables: Box::new([]),
            recent: Default::default(),
            more: Box::new([]),
        }
    }

    /// Load the root at `at`, reusing the already mapped tables of `prev` that it still names
    /// at the same place.
    fn load(
        packs: &Packs,
        at: u64,
        prev: Option<&Snapshot>,
    ) -> std::result::Result<Snapshot, Miss> {
        if at == 0 {
            return Ok(Snapshot::empty());
        }
        let (seq, off) = place_in_pack(at).ok_or(Error::Corrupt("anchor names no root"))?;
        let pack = packs.get(seq)?;
        let (map, header) = segment::open_embedded(&pack, off, Kind::Root)?;
        let root = RootView::new(map)?;
        let mut keep: HashMap<(u32, u32, u64), Arc<TableView>> = HashMap::new();
        if let Some(prev) = prev {
            if let Some(proot) = &prev.root {
                for (i, slot) in prev.tables.iter().enumerate() {
                    if let (Some(t), Some(r)) = (slot.get(), proot.get(i)) {
                        keep.insert((r.nsid, r.part, r.table_at), t.clone());
                    }
                }
            }
        }
        let tables: Box<[OnceLock<Arc<TableView>>]> = (0..root.len())
            .map(|i| {
                let cell = OnceLock::new();
                if let Some(t) = root
                    .get(i)
                    .and_then(|r| keep.get(&(r.nsid, r.part, r.table_at)))
                {
                    let _ = cell.set(t.clone());
                }
                cell
            })
            .collect();
        Ok(Snapshot {
            at,
            gen: header.generation,
            recent: Default::default(),
            more: recent_slots(root.len()),
            root: Some(root),
            tables,
        })
    }

    /// The root index of (`ns`, `part`) past the first few lookups ([`Snapshot::recent`]):
    /// remembered in the first free one of those, else in [`Snapshot::more`].
    #[inline(never)]
    fn find_more(&self, root: &RootView, ns: &str, part: u32) -> Option<usize> {
        if let Some(c) = self.recent.iter().find(|c| c.get().is_none()) {
            let i = root.find(ns, part);
            // Another thread may take the slot first: either way every slot holds a right
            // answer.
            let _ = c.set((ns.into(), part, i));
            return i;
        }
        let slots = self.more.len();
        let mut free = None;
        if slots > 0 {
            let start = recent_hash(ns.as_bytes(), part);
            for k in 0..RECENT_PROBES.min(slots) {
                let c = &self.more[(start + k) & (slots - 1)];
                match c.get() {
                    Some((name, p, i))
                        if *p == part && same_bytes(name.as_bytes(), ns.as_bytes()) =>
                    {
                        return *i;
                    }
                    Some(_) => {}
                    None => {
                        free = Some(c);
                        break;
                    }
                }
            }
        }
        let i = root.find(ns, part);
        if let Some(c) = free {
            let _ = c.set((ns.into(), part, i));
        }
        i
    }

    /// R4: the table of (`ns`, `part`) the root names, mapped (R2, R3) and validated on first use.
    #[inline]
    fn table(
        &self,
        packs: &Packs,
        ns: &str,
        part: u32,
    ) -> std::result::Result<&Arc<TableView>, Miss> {
        // Hot path: no `Error` is built unless it is returned (Error has a destructor).
        let Some(root) = self.root.as_ref() else {
            return Err(Miss::Err(Error::NotFound));
        };
        let cached = self.recent.iter().find_map(|c| match c.get() {
            Some((name, p, i)) if *p == part && same_bytes(name.as_bytes(), ns.as_bytes()) => {
                Some(*i)
            }
            _ => None,
        });
        let found = match cached {
            Some(i) => i,
            None => self.find_more(root, ns, part),
        };
        let Some(i) = found else {
            return Err(Miss::Err(Error::NotFound));
        };
        let slot = &self.tables[i];
        if let Some(t) = slot.get() {
            return Ok(t);
        }
        let r = root.get(i).ok_or(Error::Corrupt("root reference"))?;
        let map = if place_in_pack(r.table_at).is_some() {
            packs.embedded(r.table_at, Kind::Table)?
        } else {
            let name = table_name(r.nsid, r.part, r.table_at);
            match segment::open(&packs.dir, &name, Kind::Table) {
                Ok((m, _)) => m,
                Err(Error::NotFound) => return Err(Miss::Stale),
                Err(e) => return Err(Miss::Err(e)),
            }
        };
        let view = Arc::new(TableView::new(map)?);
        // Another thread may have won the race; either view is equally valid.
        Ok(slot.get_or_init(|| view))
    }
}

impl Reader {
    /// Attach to the store at `path` (a store directory).
    ///
    /// The store's files must belong to the store's owner (checked on every open), and a
    /// reader trusts that user as it trusts the server: the bytes a writer published are read
    /// in place, validated once, on the writer's promise never to change them. A process of
    /// that user that rewrites or truncates a published file under the reader can make it
    /// answer values never written, or fault (crate docs, "Trust").
    pub fn attach(path: &Path) -> Result<Reader> {
        let dir = StoreDir::open(path)?;
        let anchor = segment::open_anchor(&dir)?;
        let reader = Reader {
            packs: Packs {
                dir,
                mapped: Mutex::new(HashMap::new()),
            },
            anchor,
            current: SnapshotCell::new(Snapshot::empty()),
            owner: pins::Owner::default(),
            refresh_lock: Mutex::new(()),
            #[cfg(feature = "test-knobs")]
            retire: std::env::var_os(ENV_READER_RETIRE).is_none_or(|v| v != "off"),
        };
        reader.refresh()?;
        Ok(reader)
    }

    /// Attach to the store named by `$RSHM_STORE` (set by the server at setup_fork).
    pub fn attach_from_env() -> Result<Reader> {
        let path = std::env::var_os(ENV_STORE).ok_or(Error::NotFound)?;
        Reader::attach(Path::new(&path))
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        self.packs.dir.path()
    }

    /// Pin the calling thread. Hold the pin across many gets; values borrowed through it stay
    /// mapped until it is dropped, even if the store moves on.
    #[inline]
    pub fn pin(&self) -> Pin<'_> {
        Pin {
            guard: pins::pin(&self.owner, &self.current),
            _reader: PhantomData,
        }
    }

    #[inline]
    fn published_at(&self) -> u64 {
        match self.anchor.atomic_u64(ROOT_AT_OFF) {
            // R1
            Some(word) => protocol::current_root(word),
            None => 0,
        }
    }

    /// The data classes the writer withdrew for good ([`Writer::withdraw`](crate::Writer::withdraw),
    /// P6, R5): a mask whose bits the layers above the store define.
    pub fn withdrawn(&self) -> u64 {
        self.anchor
            .atomic_u64(WITHDRAWN_OFF)
            .map_or(0, protocol::withdrawn)
    }

    /// Move to the newest published generation if there is one. Returns whether it moved.
    pub fn refresh(&self) -> Result<bool> {
        let pin = self.pin();
        self.refresh_pinned(&pin)
    }

    fn refresh_pinned(&self, pin: &Pin<'_>) -> Result<bool> {
        let _only_one = self.refresh_lock.lock();
        for _ in 0..STALE_RETRIES {
            let gen = self.published_at();
            let cur = self.current.load(&pin.guard);
            if gen == cur.at {
                return Ok(false);
            }
            match Snapshot::load(&self.packs, gen, Some(cur)) {
                #[cfg(feature = "test-knobs")]
                Ok(snap) if !self.retire => {
                    self.current.replace_leaking(snap, &pin.guard);
                    return Ok(true);
                }
                Ok(snap) => {
                    self.current.replace(snap, &pin.guard);
                    return Ok(true);
                }
                // The generation moved on (R2), unless the whole store was removed.
                Err(Miss::Stale) if self.published_at() != gen => continue,
                Err(Miss::Stale) if self.store_removed()? => return Err(Error::StoreRemoved),
                Err(Miss::Stale) => continue,
                Err(Miss::Err(e)) => return Err(e),
            }
        }
        if self.store_removed()? {
            return Err(Error::StoreRemoved);
        }
        Err(Error::NotReady)
    }

    /// A file this reader needs is missing while the anchor still names its generation: was
    /// the whole store removed? The writer's close removes the anchor before any other file
    /// (`StoreDir::remove_all`), so no anchor means the store is gone; an anchor still there
    /// means someone removed that one file.
    fn store_removed(&self) -> Result<bool> {
        Ok(!self.packs.dir.holds(ANCHOR_NAME)?)
    }

    /// The snapshot for a get: the current one, after moving to a newer generation if the anchor
    /// names one.
    #[inline]
    fn snapshot<'p>(&'p self, pin: &'p Pin<'_>) -> Result<&'p Snapshot> {
        let snap = self.current.load(&pin.guard);
        if snap.at == self.published_at() {
            return Ok(snap);
        }
        self.refresh_pinned(pin)?;
        Ok(self.current.load(&pin.guard))
    }

    /// The value of `key` in `realm` of table `part` of namespace `ns`. It borrows both the
    /// pin and the reader: a value cannot outlive either.
    ///
    /// ```
    /// # fn f(r: rshm_gds::Reader) -> rshm_gds::Result<()> {
    /// let pin = r.pin();
    /// let v = r.get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k")?;
    /// println!("{v:?}");
    /// # Ok(()) }
    /// ```
    /// The same with the reader or the pin dropped before the value is used does not compile:
    /// ```compile_fail,E0505
    /// # fn f(r: rshm_gds::Reader) -> rshm_gds::Result<()> {
    /// let pin = r.pin();
    /// let v = r.get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k")?;
    /// drop(r); // would unmap the value's bytes
    /// println!("{v:?}");
    /// # Ok(()) }
    /// ```
    /// ```compile_fail,E0505
    /// # fn f(r: rshm_gds::Reader) -> rshm_gds::Result<()> {
    /// let pin = r.pin();
    /// let v = r.get(&pin, "ns", rshm_gds::part::DATA, rshm_gds::Realm::Job, "k")?;
    /// drop(pin); // would let the store retire the value's generation
    /// println!("{v:?}");
    /// # Ok(()) }
    /// ```
    pub fn get<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        part: u32,
        realm: Realm,
        key: &str,
    ) -> Result<ValueRef<'p>> {
        let table = self.table(pin, ns, part)?;
        match table.get(realm, key) {
            Some(v) => Ok(v),
            None => Err(Error::NotFound),
        }
    }

    /// The mapped table `part` of namespace `ns` in the current generation.
    #[inline]
    pub fn table<'p>(&'p self, pin: &'p Pin<'_>, ns: &str, part: u32) -> Result<&'p TableView> {
        self.table_arc(pin, ns, part).map(|t| &**t)
    }

    /// [`Reader::table`] as the shared handle of its mapping: holding a clone keeps the table's
    /// bytes mapped after the pin is dropped and the store moves on (the C client's
    /// PMIX_GET_POINTER_VALUES values live that long).
    #[inline]
    ///
    /// ```compile_fail,E0505
    /// # fn f(r: rshm_gds::Reader) -> rshm_gds::Result<()> {
    /// let pin = r.pin();
    /// let t = r.table_arc(&pin, "ns", rshm_gds::part::DATA)?;
    /// drop(r);
    /// let _keep = t.clone();
    /// # Ok(()) }
    /// ```
    pub fn table_arc<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        part: u32,
    ) -> Result<&'p Arc<TableView>> {
        let mut snap = self.snapshot(pin)?;
        for _ in 0..STALE_RETRIES {
            match snap.table(&self.packs, ns, part) {
                Ok(t) => return Ok(t),
                Err(Miss::Err(e)) => return Err(e),
                Err(Miss::Stale) => {
                    let moved = self.refresh_pinned(pin)?;
                    if !moved && self.store_removed()? {
                        return Err(Error::StoreRemoved);
                    }
                    snap = self.current.load(&pin.guard);
                }
            }
        }
        if self.store_removed()? {
            return Err(Error::StoreRemoved);
        }
        // The generation did not move, yet the file it names stays missing while the store
        // lives: someone removed that file.
        Err(Error::Corrupt(
            "a table named by the current root is missing",
        ))
    }

    /// Namespaces (with their parts) of the current generation.
    pub fn namespaces(&self, pin: &Pin<'_>) -> Result<Vec<(String, u32)>> {
        let snap = self.snapshot(pin)?;
        let Some(root) = &snap.root else {
            return Ok(Vec::new());
        };
        Ok((0..root.len())
            .filter_map(|i| root.get(i))
            .map(|r| (String::from_utf8_lossy(r.name).into_owned(), r.part))
            .collect())
    }

    /// Diagnostics of the current snapshot.
    pub fn stats(&self) -> ReaderStats {
        let pin = self.pin();
        let snap = self.current.load(&pin.guard);
        let tables: Vec<&Arc<TableView>> = snap.tables.iter().filter_map(|t| t.get()).collect();
        ReaderStats {
            generation: snap.gen,
            mapped_tables: tables.len(),
            mapped_bytes: tables.iter().map(|t| t.mapped_len()).sum(),
        }
    }
}
