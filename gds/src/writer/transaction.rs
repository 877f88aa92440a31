//! A [`Transaction`]: the tables and removals a writer publishes together as one root
//! generation (docs/protocol.md P1-P5), and what a transaction dropped without commit undoes.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};

use smallvec::SmallVec;

use super::{Name, Published, TableKey, Writer, PACK_TABLE_MAX, REAP_ASIDE_BYTES};
use crate::error::{Error, Result};
use crate::layout::{key_hash, pack_place, MAX_NSPACE_LEN, ROOT_AT_OFF, STATE_OFF};
use crate::pack::Pack;
use crate::protocol;
use crate::root::{self, RefSpec};
use crate::segment::{self, pack_name, table_name};
use crate::table::TableBuilder;

/// A set of changes published together as one root generation.
pub struct Transaction<'w> {
    pub(super) writer: &'w mut Writer,
    /// The current pack's tail when the transaction began: where it is rewound to when the
    /// transaction is dropped.
    pub(super) tail: u64,
    /// The pack the published root is in, once the transaction has moved to a new one: it is
    /// unlinked when the new root is published, and current again if the transaction is
    /// dropped.
    pub(super) retired: Option<Pack>,
    /// Published embedded tables copied into the new pack: their new places.
    pub(super) relocated: BTreeMap<TableKey, u64>,
    /// Bytes appended to packs.
    pub(super) packed: u64,
    /// Packs this transaction created (counted as files written).
    pub(super) new_packs: u64,
    /// Files written by this transaction, not yet referenced by any published root.
    /// With their lengths (counted in the writer's stats once committed).
    pub(super) written: Vec<(String, u64)>,
    /// Tables written: (namespace, part, what is published of it).
    pub(super) puts: SmallVec<[(TableKey, Published); 2]>,
    pub(super) removes: Vec<String>,
    /// Single tables removed: (namespace, part).
    pub(super) part_removes: Vec<(String, u32)>,
}

impl<'w> Transaction<'w> {
    pub(super) fn new(writer: &'w mut Writer) -> Transaction<'w> {
        let tail = writer.pack.as_ref().map_or(0, Pack::tail);
        Transaction {
            writer,
            tail,
            retired: None,
            relocated: BTreeMap::new(),
            packed: 0,
            new_packs: 0,
            written: Vec::new(),
            puts: SmallVec::new(),
            removes: Vec::new(),
            part_removes: Vec::new(),
        }
    }

    /// Replace (or create) the table `part` of namespace `ns` with `table`, in a file of its
    /// own. It is written now; nobody can see it before `commit`. Parts are `u32`s the
    /// layers above the store choose (format.md section 5); the store gives them no meaning.
    pub fn put_table(&mut self, ns: &str, part: u32, table: &TableBuilder) -> Result<()> {
        self.put(ns, part, table, false)
    }

    /// [`put_table`](Self::put_table) for a small table that changes often: appended to the
    /// current pack when it is at most 256 KiB (format.md section 10), else a file of its own.
    pub fn put_table_packable(&mut self, ns: &str, part: u32, table: &TableBuilder) -> Result<()> {
        self.put(ns, part, table, true)
    }

    fn put(&mut self, ns: &str, part: u32, table: &TableBuilder, packable: bool) -> Result<()> {
        let (nsid, gen) = self.begin_put(ns, part)?;
        // Planned first (every offset and the length), then encoded straight into the new file
        // or the pack: no buffer of the whole segment to build and copy; values go from the
        // builder's arenas to the file in one gathered write per run of them.
        let plan = table.plan()?;
        let len = plan.total_len();
        let at = if packable && len <= PACK_TABLE_MAX {
            // The plan skips padding (a fresh file is zeros): the pack's range is cleared
            // first, a rewound transaction may have left bytes there.
            self.append_table(len, |out| {
                out.fill(0);
                plan.write(out, gen)
            })?
        } else {
            let w = &mut *self.writer;
            let name = table_name(nsid, part, gen);
            segment::create_streamed(w.dir(), &name, len, w.own, |file| plan.write(file, gen))?;
            self.written.push((name, len as u64));
            0
        };
        self.end_put(ns, part, nsid, gen, len, at);
        Ok(())
    }

    /// Replace (or create) table `part` of `ns` with a table of `len` bytes (at most
    /// [`PACK_TABLE_MAX`]) that `write` encodes, every byte of it, for the generation it is
    /// given: appended to the pack, with no builder (a commit's rank table,
    /// `table::small`).
    pub(crate) fn put_packed(
        &mut self,
        ns: &str,
        part: u32,
        len: usize,
        write: impl FnOnce(&mut [u8], u64) -> Result<()>,
    ) -> Result<()> {
        if len > PACK_TABLE_MAX {
            return Err(Error::InvalidArgument("not a small table".into()));
        }
        let (nsid, gen) = self.begin_put(ns, part)?;
        let at = self.append_table(len, |out| write(out, gen))?;
        self.end_put(ns, part, nsid, gen, len, at);
        Ok(())
    }

    /// Check `ns`, forget an earlier put of (`ns`, `part`) and give the table its namespace id
    /// and generation.
    fn begin_put(&mut self, ns: &str, part: u32) -> Result<(u32, u64)> {
        if ns.is_empty() || ns.len() > MAX_NSPACE_LEN || ns.as_bytes().contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "bad namespace name {ns:?} (1..=255 bytes)"
            )));
        }
        self.forget_put(ns, part)?;
        let w = &mut *self.writer;
        let nsid = match w.nsids.get(ns) {
            Some(&id) => id,
            None => match self.puts.iter().find(|p| &*p.0 .1 == ns) {
                Some(p) => p.1.nsid,
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
        Ok((nsid, w.next_gen()))
    }

    /// Append a table of `len` bytes that `fill` writes to the pack (P1p); its place.
    fn append_table(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<u64> {
        self.room(len as u64)?;
        let pack = self.writer.pack.as_mut().expect("room makes a pack");
        let off = pack.append(len, |_, out| fill(out))?;
        self.packed += len as u64;
        Ok(pack_place(pack.seq(), off))
    }

    fn end_put(&mut self, ns: &str, part: u32, nsid: u32, gen: u64, len: usize, at: u64) {
        self.removes.retain(|r| r != ns);
        self.part_removes.retain(|r| !(r.0 == ns && r.1 == part));
        let p = Published {
            nsid,
            gen,
            len: len as u64,
            at,
        };
        let key = self.writer.table_key(ns, part);
        self.puts.push((key, p));
    }

    /// Forget an earlier put of (`ns`, `part`) in this transaction (never published): its file
    /// is removed; an embedded one stays in the pack, unreachable.
    fn forget_put(&mut self, ns: &str, part: u32) -> Result<()> {
        if let Some(pos) = self
            .puts
            .iter()
            .position(|p| &*p.0 .1 == ns && p.0 .2 == part)
        {
            let (_, p) = self.puts.remove(pos);
            if p.at == 0 {
                let name = table_name(p.nsid, part, p.gen);
                self.writer.dir().unlink(&name)?;
                self.written.retain(|(n, _)| *n != name);
            }
        }
        Ok(())
    }

    /// Remove table `part` of namespace `ns` (its other parts stay). Writes no table, so it can
    /// be published when a replacement table cannot be written (a full filesystem): the commit
    /// writes only a root.
    pub fn remove_table(&mut self, ns: &str, part: u32) -> Result<()> {
        self.forget_put(ns, part)?;
        self.part_removes.push((ns.to_owned(), part));
        Ok(())
    }

    /// Remove namespace `ns` (all its parts) from the store.
    pub fn remove_namespace(&mut self, ns: &str) {
        // Tables of `ns` written by this transaction will never be published: removed now.
        for ((_, _, part), p) in self.puts.iter().filter(|p| &*p.0 .1 == ns) {
            if p.at == 0 {
                let name = table_name(p.nsid, *part, p.gen);
                let _ = self.writer.dir().unlink(&name);
                self.written.retain(|(n, _)| *n != name);
            }
        }
        self.puts.retain(|p| &*p.0 .1 != ns);
        self.removes.push(ns.to_owned());
    }

    /// The new root's bytes: the published tables (at their new places if the transaction
    /// moved to a new pack), replaced or dropped as the transaction says, merged with the new
    /// ones (both in root order).
    fn encode_root(
        &self,
        gen: u64,
        puts: &[(TableKey, Published)],
        dropped: &dyn Fn(&TableKey) -> bool,
    ) -> Result<Vec<u8>> {
        let w = &*self.writer;
        fn spec<'k>(k: &'k TableKey, p: &Published, at: u64) -> RefSpec<'k> {
            RefSpec {
                name_hash: k.0,
                name: &k.1,
                nsid: p.nsid,
                part: k.2,
                table_at: if at != 0 { at } else { p.table_at() },
            }
        }
        let mut refs: Vec<RefSpec<'_>> = Vec::with_capacity(w.tables.len() + puts.len());
        let mut new = puts.iter().peekable();
        for (k, p) in &w.tables {
            while let Some((nk, np)) = new.next_if(|(nk, _)| nk < k) {
                refs.push(spec(nk, np, 0));
            }
            if let Some((nk, np)) = new.next_if(|(nk, _)| nk == k) {
                refs.push(spec(nk, np, 0));
            } else if !dropped(k) {
                refs.push(spec(k, p, self.relocated.get(k).copied().unwrap_or(0)));
            }
        }
        refs.extend(new.map(|(k, p)| spec(k, p, 0)));
        root::encode(gen, &refs)
    }

    /// Publish every change at once. Returns the new root generation.
    ///
    /// Costs what the transaction changed, plus one pass over the published tables to write
    /// the root (no copy of the writer's table map: a store of a thousand posted rank tables
    /// commits one rank's table at the cost of that table and a root).
    pub fn commit(mut self) -> Result<u64> {
        let gen = self.writer.next_gen();
        // Ordered sets, not hashed ones: a hash set's keys are drawn from thread-local state,
        // a store (and a page copy after a fork) on every commit; these are empty for a commit.
        let removed_ns: BTreeSet<String> = self.removes.iter().cloned().collect();
        let removed_parts: BTreeSet<(Name, u32)> = self
            .part_removes
            .iter()
            .map(|(ns, part)| (Name::from(ns.as_str()), *part))
            .collect();
        let dropped = |k: &TableKey| {
            removed_ns.contains(&*k.1) || removed_parts.contains(&(k.1.clone(), k.2))
        };
        // The transaction's tables in root order, moved out of it (their keys go into the
        // writer's table map as they are).
        let take_puts = |tx: &mut Transaction<'_>| {
            let mut v = std::mem::take(&mut tx.puts);
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let mut puts = take_puts(&mut self);
        let changes: SmallVec<[RefSpec<'_>; 4]> = puts
            .iter()
            .map(|(k, p)| RefSpec {
                name_hash: k.0,
                name: &k.1,
                nsid: p.nsid,
                part: k.2,
                table_at: p.table_at(),
            })
            .collect();
        // The published root patched (a copy of it with this transaction's records spliced
        // in, written straight into the pack), when the transaction only puts tables, in the
        // same pack; otherwise encoded anew from every table.
        let w = &mut *self.writer;
        let simple = removed_ns.is_empty() && removed_parts.is_empty() && self.relocated.is_empty();
        let patch = match (simple, w.last_root, w.pack.as_mut()) {
            (true, Some((seq, at, len)), Some(pack)) if seq == pack.seq() => {
                let prev = pack.segment(at, len)?;
                root::patch_len(prev, &changes)
                    .filter(|&n| pack.fits(n as u64))
                    .map(|n| (at as usize, len, n))
            }
            _ => None,
        };
        let (off, len) = match patch {
            Some((at, prev_len, n)) => {
                let pack = w.pack.as_mut().expect("patched in the current pack");
                let off = pack.append(n, |before, out| {
                    let prev = before.get(at..at + prev_len);
                    prev.and_then(|prev| root::patch_into(prev, gen, &changes, out))
                        .ok_or(Error::Corrupt("published root"))?;
                    // P2 stores the state once the root is whole.
                    out[STATE_OFF..STATE_OFF + 4]
                        .copy_from_slice(&protocol::STATE_BUILDING.to_ne_bytes());
                    Ok(())
                })?;
                drop(changes);
                #[cfg(debug_assertions)]
                {
                    let enc = self.encode_root(gen, &puts, &dropped)?;
                    let pack = self
                        .writer
                        .pack
                        .as_mut()
                        .expect("patched in the current pack");
                    let mut written = pack.segment(off, n)?.to_vec();
                    written[STATE_OFF..STATE_OFF + 4]
                        .copy_from_slice(&protocol::STATE_BUILDING.to_ne_bytes());
                    debug_assert!(written == enc, "patched root");
                }
                (off, n)
            }
            None => {
                drop(changes);
                let mut bytes = self.encode_root(gen, &puts, &dropped)?;
                if !self
                    .writer
                    .pack
                    .as_ref()
                    .is_some_and(|p| p.fits(bytes.len() as u64))
                {
                    // A new pack: the tables move, so the root names them at their new places.
                    self.puts = std::mem::take(&mut puts);
                    self.room(bytes.len() as u64)?;
                    puts = take_puts(&mut self);
                    bytes = self.encode_root(gen, &puts, &dropped)?;
                }
                // P3: the root, then P2 on it; its tables went through P1 + P2 in put_table (and room).
                let pack = self.writer.pack.as_mut().expect("room makes a pack");
                let off = pack.append(bytes.len(), |_, out| {
                    out.copy_from_slice(&bytes);
                    Ok(())
                })?;
                (off, bytes.len())
            }
        };
        let pack = self.writer.pack.as_mut().expect("the root is in a pack");
        let pack_seq = pack.seq();
        let root_at = pack_place(pack_seq, off);
        self.packed += len as u64;
        let w = &mut *self.writer;
        // P4: the one store that makes the new generation current.
        let word = w
            .anchor
            .atomic_u64(ROOT_AT_OFF)
            .ok_or(Error::Corrupt("anchor"))?;
        protocol::publish_root(word, root_at);
        w.stats.publications += 1;
        w.stats.bytes_written += self.written.iter().map(|(_, len)| len).sum::<u64>() + self.packed;
        w.stats.files_written += self.written.len() as u64 + self.new_packs.min(1);
        // P5: unlink what the new root no longer names: replaced table files, and the pack the
        // previous root was in once the transaction moved to a new one. Readers that mapped
        // them keep them.
        let mut stale: Vec<(String, u64)> = Vec::new();
        if let Some(old) = self.retired.take() {
            stale.push((pack_name(old.seq()), old.capacity()));
        }
        for (k, at) in std::mem::take(&mut self.relocated) {
            if let Some(p) = w.tables.get_mut(&k) {
                p.at = at;
            }
        }
        let stale_table = |k: &TableKey, p: &Published| {
            (p.at == 0).then(|| (table_name(p.nsid, k.2, p.gen), p.len))
        };
        if !removed_ns.is_empty() || !removed_parts.is_empty() {
            let gone: Vec<TableKey> = w.tables.keys().filter(|k| dropped(k)).cloned().collect();
            for k in gone {
                if let Some(p) = w.tables.remove(&k) {
                    stale.extend(stale_table(&k, &p));
                }
            }
        }
        for (k, p) in puts {
            // Written only when new: a store to a page the server shares with a client it has
            // just forked costs a page copy.
            if w.nsids.get(&*k.1) != Some(&p.nsid) {
                w.nsids.insert(k.1.clone(), p.nsid);
            }
            if let Some(old) = w.tables.get_mut(&k) {
                stale.extend(stale_table(&k, old));
                *old = p;
            } else {
                w.tables.insert(k, p);
            }
        }
        let emptied = self.part_removes.iter().map(|(ns, _)| ns);
        for ns in self.removes.iter().chain(emptied) {
            let hash = key_hash(ns.as_bytes());
            let first = w.tables.range((hash, Name::from(ns.as_str()), 0)..).next();
            if !first.is_some_and(|(k, _)| k.0 == hash && *k.1 == **ns) {
                w.nsids.remove(ns.as_str());
            }
        }
        w.root_gen = gen;
        w.last_root = Some((pack_seq, off, len));
        self.written.clear();
        self.tail = w.pack.as_ref().map_or(0, Pack::tail);
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
        let w = &mut *self.writer;
        if let Some(old) = self.retired.take() {
            // The transaction moved to a pack no root names: back to the published one.
            if let Some(new) = w.pack.replace(old) {
                let name = pack_name(new.seq());
                drop(new);
                let _ = w.dir().unlink(&name);
            }
        }
        if let Some(pack) = w.pack.as_mut() {
            pack.rewind(self.tail);
        }
    }
}
