//! The store's single writer (in the PMIx server process).
//!
//! Changes are grouped in a [`Transaction`]: its tables are written to new files, or appended
//! to the current pack (small tables put as packable), where nothing references them yet, and `commit`
//! appends a root naming them to the pack and publishes it (docs/protocol.md P1–P5). A
//! transaction dropped without commit removes its files and rewinds the pack.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bytes::Encoder;
use crate::dir::{default_base_dir, fresh_store_name, sweep_dead_stores, Ownership, StoreDir};
use crate::error::{Error, Result};
use crate::layout::{key_hash, place_in_pack, Kind, ANCHOR_LEN, WITHDRAWN_OFF};
use crate::pack::Pack;
use crate::protocol;
use crate::raw::{RoMap, RwMap};
use crate::segment::{self, table_name, ANCHOR_NAME};

mod room;
mod transaction;

pub use transaction::Transaction;

/// Tables put as packable up to this size are appended to the pack; larger ones, and every
/// table put with `put_table`, are files of their own (a pack's rotation copies what it holds).
pub(crate) const PACK_TABLE_MAX: usize = 256 << 10;

/// Stale files at least this large have their pages freed on a helper thread (P5).
const REAP_ASIDE_BYTES: u64 = 8 << 20;

/// How to create a store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Directory to create the store in; default [`default_base_dir`].
    pub base_dir: Option<PathBuf>,
    /// Store directory name (must start with `rshm-`); default `rshm-<pid>-<nonce>`.
    pub name: Option<String>,
    /// Who besides the writer may read the store (ACL entries; the writer owns every file).
    pub ownership: Ownership,
    /// Remove stores of dead writers found in the base directory first (default true).
    pub sweep: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            base_dir: None,
            name: None,
            ownership: Ownership::PRIVATE,
            sweep: true,
        }
    }
}

/// The single writer of a store. Dropping it removes the store directory and its files.
pub struct Writer {
    dir: Option<StoreDir>,
    anchor: RwMap,
    own: Ownership,
    /// Private copy of the last `gen` handed out (never loaded back from shared memory).
    last_gen: u64,
    root_gen: u64,
    /// The pack the next embedded segment goes to (the published root is in it), and the
    /// number of the next pack.
    pack: Option<Pack>,
    next_pack: u32,
    /// The published root's pack, offset and length (the next root patches it when it is in
    /// the current pack); `None` before the first publication.
    last_root: Option<(u32, u64, usize)>,
    /// The tables of the published root, in its order.
    tables: BTreeMap<TableKey, Published>,
    nsids: HashMap<Name, u32>,
    next_nsid: u32,
    /// Private copy of the anchor's `withdrawn` mask (never loaded back).
    withdrawn: u64,
    stats: WriterStats,
}

/// A namespace's name as the writer's keys hold it: one copy shared by every key of its tables
/// (a commit's new rank table would otherwise allocate a copy, and write its pages).
type Name = Arc<str>;

/// A table's place in a root: (xxh3 of the namespace name, the name, part), the order of the
/// root's records (format.md section 5).
type TableKey = (u64, Name, u32);

/// A published table: its namespace's id, its generation, its length and its place in the
/// current pack (0: a file of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Published {
    nsid: u32,
    gen: u64,
    len: u64,
    at: u64,
}

impl Published {
    /// The root record's `table_at` (format.md section 5).
    fn table_at(&self) -> u64 {
        if self.at != 0 {
            self.at
        } else {
            self.gen
        }
    }
}

/// What a writer has published so far (benches, diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Root generations published (one per committed transaction).
    pub publications: u64,
    /// Bytes written by committed transactions: table files, and the tables and roots
    /// appended to packs (copies into a new pack included).
    pub bytes_written: u64,
    /// Files created by committed transactions (table files and packs).
    pub files_written: u64,
}

impl Writer {
    /// Create a new, empty store (root generation 0: nothing published).
    pub fn create(opts: StoreOptions) -> Result<Writer> {
        let base = opts.base_dir.clone().unwrap_or_else(default_base_dir);
        // Before the sweep: a refused base is left as it was.
        crate::dir::check_base_dir(&base)?;
        if opts.sweep {
            // Best effort: a base directory we cannot sweep is still one we may write into.
            let _ = sweep_dead_stores(&base);
        }
        let name = opts.name.clone().unwrap_or_else(fresh_store_name);
        let dir = StoreDir::create(&base, &name, opts.ownership)?;
        let anchor = {
            let mut enc = Encoder::default();
            segment::encode_header(&mut enc, Kind::Anchor, 0, ANCHOR_LEN);
            enc.buf.resize(ANCHOR_LEN as usize, 0);
            segment::create(&dir, ANCHOR_NAME, &enc.buf, opts.ownership)
        };
        let anchor = match anchor {
            Ok(a) => a,
            Err(e) => {
                let _ = dir.remove_all();
                return Err(e);
            }
        };
        Ok(Writer {
            dir: Some(dir),
            anchor,
            own: opts.ownership,
            last_gen: 0,
            root_gen: 0,
            pack: None,
            next_pack: 1,
            last_root: None,
            tables: BTreeMap::new(),
            nsids: HashMap::new(),
            next_nsid: 1,
            withdrawn: 0,
            stats: WriterStats::default(),
        })
    }

    fn dir(&self) -> &StoreDir {
        self.dir
            .as_ref()
            .expect("store directory present until drop")
    }

    /// The uid owning the store: the writer's effective uid (what a reader must trust,
    /// `RSHM_STORE_OWNER`).
    pub fn owner_uid(&self) -> u32 {
        self.dir().owner_uid()
    }

    /// The store's random id (its `rshm-id` file): what a client requires, exported beside the
    /// path (`RSHM_STORE_ID`), so that it reads only the store its own server made.
    pub fn store_id(&self) -> &str {
        self.dir().id().unwrap_or_default()
    }

    /// The store directory (what a client attaches to).
    pub fn path(&self) -> &Path {
        self.dir().path()
    }

    /// The current (published) root generation; 0 before the first commit.
    pub fn root_generation(&self) -> u64 {
        self.root_gen
    }

    /// The key of (`ns`, `part`), its name shared with the published tables' keys when the
    /// namespace has any.
    fn table_key(&self, ns: &str, part: u32) -> TableKey {
        let name = match self.nsids.get_key_value(ns) {
            Some((name, _)) => Name::clone(name),
            None => Name::from(ns),
        };
        (key_hash(ns.as_bytes()), name, part)
    }

    /// What this writer has published so far.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// The namespaces of the published root.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.nsids.keys().map(|n| n.to_string()).collect();
        v.sort();
        v
    }

    /// Start a transaction.
    pub fn begin(&mut self) -> Transaction<'_> {
        Transaction::new(self)
    }

    /// Withdraw the data classes of `classes` for good (P6): their bits are set in the
    /// anchor's `withdrawn` mask (format.md section 4), which readers read with
    /// [`Reader::withdrawn`](crate::Reader::withdrawn). The store gives the bits no meaning:
    /// a layer above it chooses a bit for a class of its tables and stops answering them once
    /// it is set. For when tables can be neither published nor removed by a commit (the store
    /// directory removed, a full filesystem): writes no file. Bits are never cleared.
    pub fn withdraw(&mut self, classes: u64) -> Result<()> {
        let word = self
            .anchor
            .atomic_u64(WITHDRAWN_OFF)
            .ok_or(Error::Corrupt("anchor"))?;
        self.withdrawn |= classes;
        protocol::withdraw(word, self.withdrawn);
        Ok(())
    }

    /// Read back the published table `part` of `ns` (the writer keeps no copy of a posted
    /// rank table): `f` of its bytes, `None` when the published root names no such table.
    pub(crate) fn with_published<T>(
        &mut self,
        ns: &str,
        part: u32,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        let Some(p) = self.tables.get(&self.table_key(ns, part)).copied() else {
            return Ok(None);
        };
        if let Some((seq, off)) = place_in_pack(p.at) {
            let pack = self.pack.as_mut().filter(|pack| pack.seq() == seq);
            let pack = pack.ok_or(Error::Corrupt("embedded table outside the current pack"))?;
            return f(pack.segment(off, p.len as usize)?).map(Some);
        }
        let (fd, len) = self.dir().open_file(&table_name(p.nsid, part, p.gen))?;
        let map = RoMap::published_file(&fd, len)?;
        f(map.bytes()).map(Some)
    }

    /// Names of the files in the store directory (for tests and diagnostics).
    pub fn files(&self) -> Result<Vec<String>> {
        self.dir().list()
    }

    fn next_gen(&mut self) -> u64 {
        self.last_gen += 1;
        self.last_gen
    }

    /// Remove the store: every file, then the directory. Readers keep their mappings.
    pub fn close(mut self) -> Result<()> {
        match self.dir.take() {
            Some(dir) => dir.remove_all(),
            None => Ok(()),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = dir.remove_all();
        }
    }
}
