//! Encoding a table segment: [`TableBuilder::plan`] plans it (every region's size and
//! offset) before a byte is written, so the writer can create the file at its final size and
//! encode straight into the mapping; [`SegmentPlan::write`] then writes each region sequentially.

use super::arena::Arena;
use super::builder::TableBuilder;
use super::bulk::{merge_by, packed, value_in, BulkEntry, DEAD, LOC_BITS, LOC_MASK};
use super::column_blocks::{self, Blocked};
use crate::bytes::{Encoder, Sink};
use crate::error::{Error, Result};
use crate::layout::{
    entry_hash, key_hash, slots_for, ColumnKind, Entry, KeyEntry, Kind, TableHeader, COLUMN_KINDS,
    HEADER_LEN, REGION_ALIGN, VALUE_ALIGN,
};
use crate::segment::encode_header;
use crate::COLUMN_KEYS;

impl TableBuilder {
    /// Plan the segment: which keys and entries, in which order, at which offsets.
    pub(crate) fn plan(&self) -> Result<SegmentPlan<'_>> {
        // Keys that still have an entry, and the keys of present columns, in byte order: ids
        // are stable for equal contents.
        let mut seen = vec![false; self.keys.len()];
        let mut values = 0usize;
        for e in self.bulk.iter().filter(|e| e.live()) {
            seen[e.kid as usize] = true;
            values += (e.len as usize).next_multiple_of(VALUE_ALIGN);
        }
        for (&(_, _, k), &(_, _, len)) in &self.entries {
            seen[k as usize] = true;
            if len > u32::MAX as usize {
                return Err(Error::InvalidArgument("value larger than 4 GiB".into()));
            }
            values += len.next_multiple_of(VALUE_ALIGN);
        }
        let mut names: Vec<&str> = (0..self.keys.len())
            .filter(|&k| seen[k])
            .map(|k| &*self.keys[k])
            .collect();
        for (c, key) in COLUMN_KEYS.iter().enumerate() {
            if self.columns[c].is_some() {
                names.push(key);
            }
        }
        names.sort_unstable();
        names.dedup();
        let mut final_id = vec![u32::MAX; self.keys.len()];
        for (new, name) in names.iter().enumerate() {
            if let Some(&old) = self.key_ids.get(*name) {
                final_id[old as usize] = new as u32;
            }
        }
        let mut loose: Vec<BulkEntry> = self
            .entries
            .iter()
            .map(|(&k, &v)| BulkEntry::of(k, v))
            .collect();
        loose.sort_unstable_by_key(|e| packed(e.class, e.id, final_id[e.kid as usize]));

        let entry_count = self.bulk_live + loose.len();
        if entry_count > u32::MAX as usize / 2 {
            return Err(Error::InvalidArgument(
                "too many entries for one table".into(),
            ));
        }
        let strings_len: usize = names.iter().map(|n| n.len()).sum();
        let r = Regions::new(names.len(), strings_len, entry_count);
        let align = |n: usize| n.next_multiple_of(REGION_ALIGN);
        let mut end = r.columns_off;
        let mut column_mask = 0u32;
        let mut column_blocks = 0u32;
        let blocked: [Option<Blocked>; COLUMN_KINDS.len()] = std::array::from_fn(|c| {
            let up_to = self
                .plain_columns_up_to
                .unwrap_or(column_blocks::PLAIN_UP_TO);
            Blocked::plan(self.columns[c].as_deref()?, COLUMN_KINDS[c], up_to)
        });
        for (c, col) in self.columns.iter().enumerate() {
            if col.is_some() {
                column_mask |= 1 << c;
                let len = match &blocked[c] {
                    Some(b) => {
                        column_blocks |= 1 << c;
                        b.len()
                    }
                    None => self.ranks as usize * COLUMN_KINDS[c].width(),
                };
                end = align(end) + len;
            }
        }
        let values_off = end.next_multiple_of(VALUE_ALIGN);
        // The last entry in segment order: its value is padded to REGION_ALIGN, not VALUE_ALIGN.
        let last_bulk = self.bulk.iter().rev().find(|e| e.live());
        let last = match (last_bulk, loose.last()) {
            (Some(b), Some(l)) => {
                let kb = packed(b.class, b.id, final_id[b.kid as usize]);
                let kl = packed(l.class, l.id, final_id[l.kid as usize]);
                Some(if kb > kl { b } else { l })
            }
            (b, l) => b.or(l),
        };
        let total = match last {
            None => align(end),
            Some(e) => align(
                values_off + values - (e.len as usize).next_multiple_of(VALUE_ALIGN)
                    + e.len as usize,
            ),
        };
        Ok(SegmentPlan {
            b: self,
            names,
            final_id,
            loose,
            r,
            column_mask,
            column_blocks,
            blocked,
            values_off,
            total,
        })
    }

    /// Encode the segment for generation `generation` (header state BUILDING).
    /// Deterministic: the same contents give the same bytes whatever the insertion order.
    pub fn encode(&self, generation: u64) -> Result<Vec<u8>> {
        let plan = self.plan()?;
        let mut buf = vec![0u8; plan.total_len()];
        plan.write(&mut buf[..], generation)?;
        Ok(buf)
    }
}

/// A planned table segment ([`TableBuilder::plan`]): every region's offset and the file's
/// length, known before a byte is written.
pub(crate) struct SegmentPlan<'a> {
    b: &'a TableBuilder,
    names: Vec<&'a str>,
    /// Builder key id → key id in the segment.
    final_id: Vec<u32>,
    /// The one-by-one entries, in segment order.
    loose: Vec<BulkEntry>,
    r: Regions,
    column_mask: u32,
    /// Bit `c`: column `c` is stored in blocks (`blocked[c]`).
    column_blocks: u32,
    blocked: [Option<Blocked>; COLUMN_KINDS.len()],
    values_off: usize,
    total: usize,
}

/// Where a table's regions go (format.md section 6), from the sizes of its keys, key strings
/// and entries: one layout for every encoder (`SegmentPlan`, `table::small`).
pub(super) struct Regions {
    pub key_count: usize,
    pub key_slots: usize,
    pub keys_off: usize,
    pub key_index_off: usize,
    pub strings_off: usize,
    pub strings_len: usize,
    pub entry_count: usize,
    pub entry_slots: usize,
    pub entries_off: usize,
    pub entry_index_off: usize,
    /// The end of the entry index: where proc columns (if any), then values, go.
    pub columns_off: usize,
}

impl Regions {
    pub(super) fn new(key_count: usize, strings_len: usize, entry_count: usize) -> Regions {
        let align = |n: usize| n.next_multiple_of(REGION_ALIGN);
        let (key_slots, entry_slots) = (slots_for(key_count), slots_for(entry_count));
        let keys_off = align(HEADER_LEN + size_of::<TableHeader>());
        let key_index_off = align(keys_off + key_count * size_of::<KeyEntry>());
        let strings_off = align(key_index_off + key_slots * 4);
        let entries_off = align(strings_off + strings_len);
        let entry_index_off = align(entries_off + entry_count * size_of::<Entry>());
        Regions {
            key_count,
            key_slots,
            keys_off,
            key_index_off,
            strings_off,
            strings_len,
            entry_count,
            entry_slots,
            entries_off,
            entry_index_off,
            columns_off: align(entry_index_off + entry_slots * 4),
        }
    }

    /// Write the table header's region fields (format.md section 6; the proc columns' are the
    /// caller's) into `out`, a segment whose common header is at 0.
    pub(super) fn put_header(&self, out: &mut [u8]) {
        let th = HEADER_LEN;
        put32(out, th, self.key_count as u32);
        put32(out, th + 4, self.key_slots as u32);
        put64(out, th + 8, self.keys_off as u64);
        put64(out, th + 16, self.key_index_off as u64);
        put64(out, th + 24, self.strings_off as u64);
        put64(out, th + 32, self.strings_len as u64);
        put32(out, th + 40, self.entry_count as u32);
        put32(out, th + 44, self.entry_slots as u32);
        put64(out, th + 48, self.entries_off as u64);
        put64(out, th + 56, self.entry_index_off as u64);
    }
}

pub(super) fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
pub(super) fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Hash-index slots in one bucket of [`fill_index`]: 32 KiB of slots, which stay in cache while
/// the bucket's items are inserted.
const BUCKET_SLOTS_LOG2: u32 = 13;

/// Fill a hash index (format.md "Lookup": linear probing) whose `slots` bytes are zero: item
/// `i` (stored as `i + 1`) goes to the first free slot from `homes[i]`.
///
/// A large index is filled bucket by bucket (items grouped by the top bits of their home slot,
/// in item order inside a bucket), so its slots are written while in cache instead of at
/// random over megabytes. Any insertion order gives a valid index (a probe from an item's home
/// slot meets no empty slot before the item); a small index (one bucket) is filled in item
/// order, as it always was.
pub(super) fn fill_index(slots: &mut [u8], homes: &[u32]) {
    let n = slots.len() / 4;
    if n == 0 {
        return;
    }
    let mask = n - 1;
    let mut insert = |item: u32, home: u32| {
        let mut s = home as usize;
        loop {
            let slot = &mut slots[s * 4..s * 4 + 4];
            if slot == [0u8; 4] {
                slot.copy_from_slice(&(item + 1).to_ne_bytes());
                return;
            }
            s = (s + 1) & mask;
        }
    };
    let buckets = n >> BUCKET_SLOTS_LOG2;
    if buckets <= 1 {
        for (i, &h) in homes.iter().enumerate() {
            insert(i as u32, h);
        }
        return;
    }
    let mut next = vec![0usize; buckets];
    for &h in homes {
        next[(h >> BUCKET_SLOTS_LOG2) as usize] += 1;
    }
    let mut sum = 0;
    for c in &mut next {
        (*c, sum) = (sum, sum + *c);
    }
    // (item, home) grouped by bucket: written as `buckets` sequential streams.
    let mut grouped = vec![0u64; homes.len()];
    for (i, &h) in homes.iter().enumerate() {
        let b = &mut next[(h >> BUCKET_SLOTS_LOG2) as usize];
        grouped[*b] = ((i as u64) << 32) | h as u64;
        *b += 1;
    }
    for g in grouped {
        insert((g >> 32) as u32, g as u32);
    }
}

/// Records of the entry region written per chunk: 192 KiB, written while in cache.
const ENTRY_CHUNK: usize = 8192;
/// Ranks of a proc column [`SegmentPlan::write`] converts per write.
const COLUMN_CHUNK: usize = 16384;
/// Pieces per gathered write of values (IOV_MAX is 1024 on Linux).
const MAX_PIECES: usize = 1024;
/// Zeros for the padding between values.
const ZEROS: [u8; VALUE_ALIGN] = [0; VALUE_ALIGN];

/// Values on their way to the segment: runs of bytes adjacent in the builder's arenas (a fence
/// batch's cards, 16-byte multiples in rank order, are one run), and padding; written with one
/// gathered write per `MAX_PIECES` pieces.
struct ValueWriter<'a> {
    arenas: &'a [Arena],
    /// File offset of the first piece.
    off: usize,
    /// (location, length) of arena bytes, or (u64::MAX, padding length).
    pieces: Vec<(u64, usize)>,
    /// File offset after the last piece.
    end: usize,
}

impl ValueWriter<'_> {
    fn push(&mut self, sink: &mut (impl Sink + ?Sized), loc: u64, len: usize) -> Result<()> {
        if let Some(last) = self.pieces.last_mut() {
            let adjacent = last.0 != u64::MAX
                && if loc == u64::MAX {
                    // Padding the arena holds already (a run padded as the file is): zeros
                    // right after the last piece.
                    let off = (last.0 & LOC_MASK) as usize + last.1;
                    self.arenas[(last.0 >> LOC_BITS) as usize]
                        .as_ref()
                        .get(off..off + len)
                        .is_some_and(|pad| pad.iter().all(|&b| b == 0))
                } else {
                    last.0 + last.1 as u64 == loc && last.0 >> LOC_BITS == loc >> LOC_BITS
                };
            if adjacent {
                last.1 += len;
                self.end += len;
                return Ok(());
            }
        }
        if self.pieces.len() == MAX_PIECES {
            self.flush(sink)?;
        }
        self.pieces.push((loc, len));
        self.end += len;
        Ok(())
    }

    fn flush(&mut self, sink: &mut (impl Sink + ?Sized)) -> Result<()> {
        let bufs: Vec<&[u8]> = self
            .pieces
            .iter()
            .map(|&(loc, len)| match loc {
                u64::MAX => &ZEROS[..len],
                loc => value_in(self.arenas, loc, len),
            })
            .collect();
        sink.write_all_at(self.off, &bufs)?;
        self.pieces.clear();
        self.off = self.end;
        Ok(())
    }
}

impl SegmentPlan<'_> {
    /// Length of the segment file.
    pub(crate) fn total_len(&self) -> usize {
        self.total
    }

    /// Write the segment for generation `generation` (header state BUILDING) into `out`, whose
    /// `total_len()` bytes are zero (a fresh, fallocated file or a zeroed buffer): padding and
    /// reserved fields are not written. Every region is written sequentially: the head (headers,
    /// keys, strings) from a small buffer, entries per chunk, values straight from the arenas,
    /// the entry index once built.
    pub(crate) fn write(&self, out: &mut (impl Sink + ?Sized), generation: u64) -> Result<()> {
        let b = self.b;
        let mut head = vec![0u8; self.r.entries_off];
        let mut enc = Encoder::default();
        encode_header(&mut enc, Kind::Table, generation, self.total as u64);
        head[..HEADER_LEN].copy_from_slice(&enc.buf);
        self.r.put_header(&mut head);
        let th = HEADER_LEN;
        if self.column_mask != 0 {
            put32(&mut head, th + 64, b.ranks);
            put32(&mut head, th + 68, self.column_mask);
            put64(&mut head, th + 72, self.r.columns_off as u64);
            put32(&mut head, th + 80, self.column_blocks);
        }

        // Keys, key index, strings.
        let mut str_off = 0usize;
        let mut homes = Vec::with_capacity(self.names.len());
        for (kid, name) in self.names.iter().enumerate() {
            let h = key_hash(name.as_bytes());
            homes.push((h as usize & self.r.key_slots.wrapping_sub(1)) as u32);
            let rec = self.r.keys_off + kid * size_of::<KeyEntry>();
            put64(&mut head, rec, h);
            put32(&mut head, rec + 8, str_off as u32);
            put32(&mut head, rec + 12, name.len() as u32);
            let s = self.r.strings_off + str_off;
            head[s..s + name.len()].copy_from_slice(name.as_bytes());
            str_off += name.len();
        }
        fill_index(
            &mut head[self.r.key_index_off..self.r.key_index_off + self.r.key_slots * 4],
            &homes,
        );
        out.write_at(0, &head)?;
        drop(head);

        // Entries (per chunk) and their values (gathered), in segment order; the entry index
        // after, from the entries' home slots.
        let final_id = &self.final_id;
        let key = |e: &BulkEntry| packed(e.class, e.id, final_id[e.kid as usize]);
        let mut bulk = b.bulk.iter().copied().filter(BulkEntry::live);
        let mask = self.r.entry_slots.wrapping_sub(1);
        let mut homes = Vec::with_capacity(self.r.entry_count);
        let mut chunk = vec![0u8; ENTRY_CHUNK.min(self.r.entry_count) * size_of::<Entry>()];
        let (mut in_chunk, mut chunk_off) = (0usize, self.r.entries_off);
        let mut values = ValueWriter {
            arenas: &b.arenas,
            off: self.values_off,
            pieces: Vec::with_capacity(MAX_PIECES),
            end: self.values_off,
        };
        let mut v = self.values_off;
        let mut put = |e: BulkEntry| -> Result<()> {
            let kid = final_id[e.kid as usize];
            let len = e.len as usize;
            let r = &mut chunk[in_chunk * size_of::<Entry>()..(in_chunk + 1) * size_of::<Entry>()];
            r[0..2].copy_from_slice(&e.class.to_ne_bytes());
            r[2..4].copy_from_slice(&(e.flags & !DEAD).to_ne_bytes());
            r[4..8].copy_from_slice(&e.id.to_ne_bytes());
            r[8..12].copy_from_slice(&kid.to_ne_bytes());
            r[12..16].copy_from_slice(&e.len.to_ne_bytes());
            r[16..24].copy_from_slice(&(v as u64).to_ne_bytes());
            in_chunk += 1;
            if in_chunk * size_of::<Entry>() == chunk.len() {
                out.write_at(chunk_off, &chunk)?;
                chunk_off += chunk.len();
                in_chunk = 0;
            }
            if v != values.end {
                values.push(out, u64::MAX, v - values.end)?;
            }
            if len > 0 {
                values.push(out, e.loc, len)?;
            }
            v = (v + len).next_multiple_of(VALUE_ALIGN);
            homes.push((entry_hash(e.class, e.id, kid) as usize & mask) as u32);
            Ok(())
        };
        let first_bulk = b.bulk.iter().find(|e| e.live()).map(key);
        if self.loose.is_empty() {
            bulk.try_for_each(&mut put)?;
        } else if first_bulk.is_none_or(|f| self.loose.last().map(key) < Some(f)) {
            // Every one-by-one entry sorts first (a fence's RANK_UNDEF index, class 6, before
            // its posted data): no per-entry merge.
            self.loose
                .iter()
                .copied()
                .chain(bulk)
                .try_for_each(&mut put)?;
        } else {
            merge_by(bulk, self.loose.iter().copied(), key).try_for_each(&mut put)?;
        }
        if in_chunk > 0 {
            out.write_at(chunk_off, &chunk[..in_chunk * size_of::<Entry>()])?;
        }
        if !values.pieces.is_empty() {
            values.flush(out)?;
        }
        drop(chunk);
        debug_assert_eq!(homes.len(), self.r.entry_count);
        let mut index = vec![0u8; self.r.entry_slots * 4];
        fill_index(&mut index, &homes);
        drop(homes);
        out.write_at(self.r.entry_index_off, &index)?;
        drop(index);

        // Proc columns, present ones in column order, each 8-aligned, written a chunk at a
        // time from one small buffer: at 1M ranks a buffer of all of them would be 20 MB of
        // fresh pages, each a page fault, for one copy.
        let mut off = self.r.columns_off;
        let mut buf = Vec::with_capacity(COLUMN_CHUNK * 4);
        for (c, col) in b.columns.iter().enumerate() {
            let Some(col) = col else { continue };
            off = off.next_multiple_of(REGION_ALIGN);
            if let Some(blocked) = &self.blocked[c] {
                blocked.write(col, COLUMN_KINDS[c], out, off)?;
                off += blocked.len();
                continue;
            }
            for part in col.chunks(COLUMN_CHUNK) {
                buf.clear();
                match COLUMN_KINDS[c] {
                    ColumnKind::Uint16 => part
                        .iter()
                        .for_each(|&v| buf.extend_from_slice(&(v as u16).to_ne_bytes())),
                    ColumnKind::Uint32 | ColumnKind::ProcRank => part
                        .iter()
                        .for_each(|&v| buf.extend_from_slice(&v.to_ne_bytes())),
                }
                out.write_at(off, &buf)?;
                off += buf.len();
            }
        }
        Ok(())
    }
}
