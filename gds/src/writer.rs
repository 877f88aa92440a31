//! The store's single writer (in the PMIx server process).
//!
//! Changes are grouped in a [`Transaction`]: its tables are written to new files that nothing
//! references yet, and `commit` publishes them all at once with one new root generation
//! (docs/protocol.md P1–P5). A transaction dropped without commit removes its files.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::bytes::Encoder;
use crate::dir::{default_base_dir, fresh_store_name, sweep_dead_stores, Ownership, StoreDir};
use crate::error::{Error, Result};
use crate::layout::{
    key_hash, Kind, ANCHOR_LEN, MAX_NSPACE_LEN, POSTED_WITHDRAWN_OFF, ROOT_GEN_OFF,
};
use crate::protocol;
use crate::raw::RwMap;
use crate::root::{self, RefSpec};
use crate::segment::{self, root_name, table_name, ANCHOR_NAME};
use crate::table::TableBuilder;

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
    /// The tables of the published root, in its order.
    tables: BTreeMap<TableKey, Published>,
    nsids: HashMap<String, u32>,
    next_nsid: u32,
    stats: WriterStats,
}

/// A table's place in a root: (xxh3 of the namespace name, the name, part), the order of the
/// root's records (format.md section 5).
type TableKey = (u64, String, u32);

fn table_key(ns: &str, part: u32) -> TableKey {
    (key_hash(ns.as_bytes()), ns.to_owned(), part)
}

/// A published table: its namespace's id, its generation and the file's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Published {
    nsid: u32,
    gen: u64,
    len: u64,
}

/// What a writer has published so far (benches, diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Root generations published (one per committed transaction).
    pub publications: u64,
    /// Bytes of the files written by committed transactions (tables and roots).
    pub bytes_written: u64,
    /// Files written by committed transactions (tables and roots).
    pub files_written: u64,
}

impl Writer {
    /// Create a new, empty store (root generation 0: nothing published).
    pub fn create(opts: StoreOptions) -> Result<Writer> {
        let base = opts.base_dir.clone().unwrap_or_else(default_base_dir);
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
            tables: BTreeMap::new(),
            nsids: HashMap::new(),
            next_nsid: 1,
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

    /// The store directory (what a client attaches to).
    pub fn path(&self) -> &Path {
        self.dir().path()
    }

    /// The current (published) root generation; 0 before the first commit.
    pub fn root_generation(&self) -> u64 {
        self.root_gen
    }

    /// What this writer has published so far.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// The namespaces of the published root.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.nsids.keys().cloned().collect();
        v.sort();
        v
    }

    /// Start a transaction.
    pub fn begin(&mut self) -> Transaction<'_> {
        Transaction {
            writer: self,
            written: Vec::new(),
            puts: Vec::new(),
            removes: Vec::new(),
            part_removes: Vec::new(),
        }
    }

    /// Withdraw every posted value of the store for good (P6): readers stop answering posted
    /// data from it (they report `StoreRemoved` for it and their callers ask elsewhere), while
    /// job data stays readable. For when posted data can be neither published nor withdrawn
    /// by a commit (the store directory removed, a full filesystem): writes no file.
    pub fn withdraw_posted_for_good(&mut self) -> Result<()> {
        let word = self
            .anchor
            .atomic_u64(POSTED_WITHDRAWN_OFF)
            .ok_or(Error::Corrupt("anchor"))?;
        protocol::withdraw_posted(word);
        Ok(())
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

/// A set of changes published together as one root generation.
pub struct Transaction<'w> {
    writer: &'w mut Writer,
    /// Files written by this transaction, not yet referenced by any published root.
    /// With their lengths (counted in the writer's stats once committed).
    written: Vec<(String, u64)>,
    /// Tables written: (namespace, part, nsid, gen, length).
    puts: Vec<(String, u32, u32, u64, u64)>,
    removes: Vec<String>,
    /// Single tables removed: (namespace, part).
    part_removes: Vec<(String, u32)>,
}

impl Transaction<'_> {
    /// Replace (or create) the table `part` of namespace `ns` with `table`. The file is written
    /// now; nobody can see it before `commit`.
    pub fn put_table(&mut self, ns: &str, part: u32, table: &TableBuilder) -> Result<()> {
        if ns.is_empty() || ns.len() > MAX_NSPACE_LEN || ns.as_bytes().contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "bad namespace name {ns:?} (1..=255 bytes)"
            )));
        }
        if let Some(pos) = self.puts.iter().position(|p| p.0 == ns && p.1 == part) {
            // Replaced again in the same transaction: the earlier file was never published.
            let (_, _, nsid, gen, _) = self.puts.remove(pos);
            let name = table_name(nsid, part, gen);
            self.writer.dir().unlink(&name)?;
            self.written.retain(|(n, _)| *n != name);
        }
        let w = &mut *self.writer;
        let nsid = match w.nsids.get(ns) {
            Some(&id) => id,
            None => match self.puts.iter().find(|p| p.0 == ns) {
                Some(p) => p.2,
                None => {
                    let id = w.next_nsid;
                    w.next_nsid = w
                        .next_nsid
                        .checked_add(1)
                        .ok_or_else(|| Error::InvalidArgument("namespace ids exhausted".into()))?;
                    id
                }
            },
        };
        let gen = w.next_gen();
        // Planned first (every offset and the file's length), then encoded straight into the
        // new file: no buffer of the whole segment to build and copy; values go from the
        // builder's arenas to the file in one gathered write per run of them.
        let plan = table.plan()?;
        let name = table_name(nsid, part, gen);
        segment::create_streamed(w.dir(), &name, plan.total_len(), w.own, |file| {
            plan.write(file, gen)
        })?;
        self.written.push((name, plan.total_len() as u64));
        self.removes.retain(|r| r != ns);
        self.part_removes.retain(|r| !(r.0 == ns && r.1 == part));
        self.puts
            .push((ns.to_owned(), part, nsid, gen, plan.total_len() as u64));
        Ok(())
    }

    /// Remove table `part` of namespace `ns` (its other parts stay). Writes no table file, so
    /// it can be published when a replacement table cannot be written (a full filesystem):
    /// the commit writes only a root.
    pub fn remove_table(&mut self, ns: &str, part: u32) -> Result<()> {
        if let Some(pos) = self.puts.iter().position(|p| p.0 == ns && p.1 == part) {
            let (_, _, nsid, gen, _) = self.puts.remove(pos);
            let name = table_name(nsid, part, gen);
            self.writer.dir().unlink(&name)?;
            self.written.retain(|(n, _)| *n != name);
        }
        self.part_removes.push((ns.to_owned(), part));
        Ok(())
    }

    /// Remove namespace `ns` (all its parts) from the store.
    pub fn remove_namespace(&mut self, ns: &str) {
        // Tables of `ns` written by this transaction will never be published: removed now.
        for (_, part, nsid, gen, _) in self.puts.iter().filter(|p| p.0 == ns) {
            let name = table_name(*nsid, *part, *gen);
            let _ = self.writer.dir().unlink(&name);
            self.written.retain(|(n, _)| *n != name);
        }
        self.puts.retain(|p| p.0 != ns);
        self.removes.push(ns.to_owned());
    }

    /// Publish every change at once. Returns the new root generation.
    ///
    /// Costs what the transaction changed, plus one pass over the published tables to write
    /// the root (no copy of the writer's table map: a store of a thousand posted rank tables
    /// commits one rank's table at the cost of that table and a root).
    pub fn commit(mut self) -> Result<u64> {
        let gen = self.writer.next_gen();
        let w = &mut *self.writer;
        let mut puts: Vec<(TableKey, Published)> = self
            .puts
            .iter()
            .map(|(ns, part, nsid, gen, len)| {
                let p = Published {
                    nsid: *nsid,
                    gen: *gen,
                    len: *len,
                };
                (table_key(ns, *part), p)
            })
            .collect();
        puts.sort_by(|a, b| a.0.cmp(&b.0));
        let removed_ns: HashSet<&str> = self.removes.iter().map(String::as_str).collect();
        let removed_parts: HashSet<(&str, u32)> = self
            .part_removes
            .iter()
            .map(|(ns, part)| (ns.as_str(), *part))
            .collect();
        let dropped = |k: &TableKey| {
            removed_ns.contains(k.1.as_str()) || removed_parts.contains(&(k.1.as_str(), k.2))
        };
        // The new root's records: the published tables, replaced or dropped as the transaction
        // says, merged with the new ones (both in root order).
        fn spec<'k>(k: &'k TableKey, p: &Published) -> RefSpec<'k> {
            RefSpec {
                name_hash: k.0,
                name: &k.1,
                nsid: p.nsid,
                part: k.2,
                table_gen: p.gen,
            }
        }
        let mut refs: Vec<RefSpec<'_>> = Vec::with_capacity(w.tables.len() + puts.len());
        let mut new = puts.iter().peekable();
        for (k, p) in &w.tables {
            while let Some((nk, np)) = new.next_if(|(nk, _)| nk < k) {
                refs.push(spec(nk, np));
            }
            if let Some((nk, np)) = new.next_if(|(nk, _)| nk == k) {
                refs.push(spec(nk, np));
            } else if !dropped(k) {
                refs.push(spec(k, p));
            }
        }
        refs.extend(new.map(|(k, p)| spec(k, p)));
        let bytes = root::encode(gen, &refs)?;
        drop(refs);
        let new_root = root_name(gen);
        // P1 + P2 for the root; its tables went through P1 + P2 in put_table.
        segment::create(w.dir(), &new_root, &bytes, w.own)?;
        // P4: the one store that makes the new generation current.
        let word = w
            .anchor
            .atomic_u64(ROOT_GEN_OFF)
            .ok_or(Error::Corrupt("anchor"))?;
        protocol::publish_root(word, gen);
        w.stats.publications += 1;
        w.stats.bytes_written +=
            self.written.iter().map(|(_, len)| len).sum::<u64>() + bytes.len() as u64;
        w.stats.files_written += self.written.len() as u64 + 1;
        // P5: unlink what the new root no longer names. Readers that mapped them keep them.
        let mut stale: Vec<(String, u64)> = Vec::new();
        if w.root_gen != 0 {
            stale.push((root_name(w.root_gen), 0));
        }
        let stale_table = |k: &TableKey, p: &Published| (table_name(p.nsid, k.2, p.gen), p.len);
        if !removed_ns.is_empty() || !removed_parts.is_empty() {
            let gone: Vec<TableKey> = w.tables.keys().filter(|k| dropped(k)).cloned().collect();
            for k in gone {
                if let Some(p) = w.tables.remove(&k) {
                    stale.push(stale_table(&k, &p));
                }
            }
        }
        for (k, p) in puts {
            if let Some(old) = w.tables.insert(k.clone(), p) {
                stale.push(stale_table(&k, &old));
            }
        }
        let emptied = self.part_removes.iter().map(|(ns, _)| ns);
        for ns in self.removes.iter().chain(emptied) {
            let hash = key_hash(ns.as_bytes());
            let first = w.tables.range((hash, ns.clone(), 0)..).next();
            if !first.is_some_and(|(k, _)| k.0 == hash && k.1 == *ns) {
                w.nsids.remove(ns);
            }
        }
        for (ns, _, nsid, _, _) in &self.puts {
            w.nsids.insert(ns.clone(), *nsid);
        }
        w.root_gen = gen;
        self.written.clear();
        let mut first_err = None;
        // Unlinking a file no reader maps frees its pages then and there: tens of milliseconds
        // of kernel time for a table of a million cards, hundreds for GiBs. A big file is
        // opened first, so the unlink only removes its name, and closed on a helper thread,
        // which frees the pages while commit returns. (No helper thread: closed here.)
        let mut reap = Vec::new();
        for (name, len) in stale {
            if len >= REAP_ASIDE_BYTES {
                if let Ok((fd, _)) = w.dir().open_file(&name) {
                    reap.push(fd);
                }
            }
            if let Err(e) = w.dir().unlink(&name) {
                first_err.get_or_insert(e);
            }
        }
        if !reap.is_empty() {
            let _ = std::thread::Builder::new()
                .name("rshm-reap".into())
                .spawn(move || drop(reap));
        }
        first_err.map_or(Ok(gen), Err)
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        for (name, _) in self.written.drain(..) {
            let _ = self.writer.dir().unlink(&name);
        }
    }
}
