//! `#[repr(C)]` mirrors of docs/format.md, with const asserts that pin every size and offset the
//! document gives. The structs are only used to name offsets and encode records; readers decode
//! fields with bounds-checked reads (never by casting mapped bytes to these structs), except for
//! the atomic words, which `raw` exposes as atomics.

#![forbid(unsafe_code)]

use core::mem::{offset_of, size_of};

/// `magic`: ASCII "RSHMSEG" and a 0 byte.
pub const MAGIC: [u8; 8] = *b"RSHMSEG\0";
/// Format major version: a reader refuses any other.
pub const FORMAT_MAJOR: u16 = 4;
/// Format minor version: compatible additions; readers accept larger minors.
pub const FORMAT_MINOR: u16 = 0;
/// `byte_order` word as written natively.
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
/// `value_format` 1: rkyv 0.8, little-endian, aligned, 32-bit relative pointers.
pub const VALUE_FORMAT: u32 = 1;
/// Size of the anchor file.
pub const ANCHOR_LEN: u64 = 4096;
/// Alignment of every archived value.
pub const VALUE_ALIGN: usize = 16;
/// Alignment of every region.
pub const REGION_ALIGN: usize = 8;
/// Most distinct keys one table may hold (the entry hash packs `key_id` in 24 bits).
pub const MAX_KEYS: usize = 1 << 24;
/// Longest key (PMIX_MAX_KEYLEN).
pub const MAX_KEY_LEN: usize = 511;
/// Longest namespace name (PMIX_MAX_NSLEN).
pub const MAX_NSPACE_LEN: usize = 255;

/// Entry `flags` bit: the value is a PMIX_BYTE_OBJECT stored as its bytes (format.md section 6).
pub const ENTRY_RAW_BYTES: u16 = 1;

/// Segment kinds (`kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    Anchor = 1,
    Root = 2,
    Table = 3,
    Pack = 4,
}

/// The common header at offset 0 of every segment (format.md section 3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub magic: [u8; 8],
    pub format_major: u16,
    pub format_minor: u16,
    pub byte_order: u32,
    pub kind: u32,
    pub state: u32,
    pub generation: u64,
    pub total_len: u64,
    pub header_len: u32,
    pub value_format: u32,
    pub writer_pid: u32,
    pub writer_uid: u32,
    pub reserved: u64,
}
const _: () = {
    assert!(size_of::<Header>() == 64);
    assert!(offset_of!(Header, format_major) == 8);
    assert!(offset_of!(Header, format_minor) == 10);
    assert!(offset_of!(Header, byte_order) == 12);
    assert!(offset_of!(Header, kind) == 16);
    assert!(offset_of!(Header, state) == 20);
    assert!(offset_of!(Header, generation) == 24);
    assert!(offset_of!(Header, total_len) == 32);
    assert!(offset_of!(Header, header_len) == 40);
    assert!(offset_of!(Header, value_format) == 44);
    assert!(offset_of!(Header, writer_pid) == 48);
    assert!(offset_of!(Header, writer_uid) == 52);
};
/// Offset of the atomic `state` word.
pub const STATE_OFF: usize = offset_of!(Header, state);
/// Size of the common header.
pub const HEADER_LEN: usize = size_of::<Header>();

/// Offset of the anchor's atomic `root_at` word (format.md section 4).
pub const ROOT_AT_OFF: usize = 64;
const _: () = assert!(ROOT_AT_OFF == HEADER_LEN && ROOT_AT_OFF.is_multiple_of(8));
/// Offset of the anchor's atomic `withdrawn` mask (format.md section 4).
pub const WITHDRAWN_OFF: usize = 72;
const _: () = assert!(WITHDRAWN_OFF == ROOT_AT_OFF + 8);

/// Bit 63 of a place (format.md section 10): the segment is embedded in a pack.
pub const PLACE_PACKED: u64 = 1 << 63;
/// Alignment of an embedded segment in its pack.
pub const PACK_ALIGN: usize = 64;
/// Largest pack sequence number (31 bits of a place).
pub const MAX_PACK_SEQ: u32 = (1 << 31) - 1;

/// The place of the segment at byte `off` (a multiple of 16, below 64 GiB) of pack `seq`.
pub fn pack_place(seq: u32, off: u64) -> u64 {
    debug_assert!(seq <= MAX_PACK_SEQ && off.is_multiple_of(16) && off >> 36 == 0);
    PLACE_PACKED | (u64::from(seq) << 32) | (off >> 4)
}

/// The (pack, offset) a place names, or `None` for a place that is not in a pack.
pub fn place_in_pack(place: u64) -> Option<(u32, u64)> {
    (place & PLACE_PACKED != 0).then_some((
        ((place >> 32) as u32) & MAX_PACK_SEQ,
        (place & 0xFFFF_FFFF) << 4,
    ))
}

/// The root segment's body header (format.md section 5).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RootHeader {
    pub ref_count: u32,
    pub reserved: u32,
    pub refs_off: u64,
    pub names_off: u64,
    pub names_len: u64,
}
const _: () = {
    assert!(size_of::<RootHeader>() == 32);
    assert!(offset_of!(RootHeader, refs_off) == 8);
    assert!(offset_of!(RootHeader, names_off) == 16);
    assert!(offset_of!(RootHeader, names_len) == 24);
};

/// One (namespace, part) → table file reference in the root.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TableRef {
    pub name_hash: u64,
    pub name_off: u32,
    pub name_len: u32,
    pub nsid: u32,
    pub part: u32,
    pub table_at: u64,
}
const _: () = {
    assert!(size_of::<TableRef>() == 32);
    assert!(offset_of!(TableRef, name_off) == 8);
    assert!(offset_of!(TableRef, name_len) == 12);
    assert!(offset_of!(TableRef, nsid) == 16);
    assert!(offset_of!(TableRef, part) == 20);
    assert!(offset_of!(TableRef, table_at) == 24);
};

/// The table segment's body header (format.md section 6).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TableHeader {
    pub key_count: u32,
    pub key_slots: u32,
    pub keys_off: u64,
    pub key_index_off: u64,
    pub strings_off: u64,
    pub strings_len: u64,
    pub entry_count: u32,
    pub entry_slots: u32,
    pub entries_off: u64,
    pub entry_index_off: u64,
    pub rank_count: u32,
    pub column_mask: u32,
    pub columns_off: u64,
    pub column_blocks: u32,
    pub reserved: [u8; 44],
}
const _: () = {
    assert!(size_of::<TableHeader>() == 128);
    assert!(offset_of!(TableHeader, rank_count) == 64);
    assert!(offset_of!(TableHeader, column_mask) == 68);
    assert!(offset_of!(TableHeader, columns_off) == 72);
    assert!(offset_of!(TableHeader, column_blocks) == 80);
    assert!(offset_of!(TableHeader, keys_off) == 8);
    assert!(offset_of!(TableHeader, key_index_off) == 16);
    assert!(offset_of!(TableHeader, strings_off) == 24);
    assert!(offset_of!(TableHeader, strings_len) == 32);
    assert!(offset_of!(TableHeader, entry_count) == 40);
    assert!(offset_of!(TableHeader, entry_slots) == 44);
    assert!(offset_of!(TableHeader, entries_off) == 48);
    assert!(offset_of!(TableHeader, entry_index_off) == 56);
};

/// One interned key.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyEntry {
    pub hash: u64,
    pub str_off: u32,
    pub str_len: u32,
}
const _: () = assert!(size_of::<KeyEntry>() == 16);

/// One (realm, key) → value record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Entry {
    pub class: u16,
    pub flags: u16,
    pub id: u32,
    pub key_id: u32,
    pub value_len: u32,
    pub value_off: u64,
}
const _: () = {
    assert!(size_of::<Entry>() == 24);
    assert!(offset_of!(Entry, id) == 4);
    assert!(offset_of!(Entry, key_id) == 8);
    assert!(offset_of!(Entry, value_len) == 12);
    assert!(offset_of!(Entry, value_off) == 16);
};

/// Where a value lives: the PMIx realm and the id inside it (format.md section 6, `class`/`id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Realm {
    /// Session realm, by session id.
    Session(u32),
    /// Job realm of the namespace.
    Job,
    /// Application realm, by app number.
    App(u32),
    /// Node realm, by node id.
    Node(u32),
    /// Process realm, by rank.
    Proc(u32),
    /// Store metadata (keys `rshm.*`): how the writer resolved the job, never a PMIx answer.
    Meta,
    /// Data posted (PMIx_Put) by a process, by rank, with its scope (`pmix_scope_t`: 1 local,
    /// 2 remote, 3 global).
    Posted { rank: u32, scope: u8 },
}

impl Realm {
    /// The (`class`, `id`) pair stored in an Entry.
    pub const fn class_id(self) -> (u16, u32) {
        match self {
            Realm::Session(id) => (1, id),
            Realm::Job => (2, 0),
            Realm::App(id) => (3, id),
            Realm::Node(id) => (4, id),
            Realm::Proc(id) => (5, id),
            Realm::Meta => (6, 0),
            Realm::Posted { rank, scope } => (6 + scope as u16, rank),
        }
    }

    /// Whether an Entry may hold this realm: a posted realm's scope is 1, 2 or 3 (any other
    /// would give a class outside 7..=9, or the metadata class 6).
    pub const fn is_storable(self) -> bool {
        match self {
            Realm::Posted { scope, .. } => scope >= 1 && scope <= 3,
            _ => true,
        }
    }

    /// The inverse of [`Realm::class_id`]; `None` for an unknown class.
    pub const fn from_class_id(class: u16, id: u32) -> Option<Realm> {
        match class {
            1 => Some(Realm::Session(id)),
            2 => Some(Realm::Job),
            3 => Some(Realm::App(id)),
            4 => Some(Realm::Node(id)),
            5 => Some(Realm::Proc(id)),
            6 => Some(Realm::Meta),
            7..=9 => Some(Realm::Posted {
                rank: id,
                scope: (class - 6) as u8,
            }),
            _ => None,
        }
    }
}

/// Whether `class` is one of the Entry classes of format.md section 6 (1..=9). A reader refuses
/// a table holding any other: a new class is a new major version.
pub const fn class_defined(class: u16) -> bool {
    Realm::from_class_id(class, 0).is_some()
}

/// The kinds of the proc columns of format.md section 6 ("Proc columns"), in column order:
/// column `c` is bit `c` of a table's `column_mask`. Which key each column holds is the job
/// data layer's (`jobdata::columns`); the table code maps keys to columns with that list.
pub const COLUMN_KINDS: [ColumnKind; 6] = [
    ColumnKind::Uint16,
    ColumnKind::Uint16,
    ColumnKind::Uint32,
    ColumnKind::Uint32,
    ColumnKind::ProcRank,
    ColumnKind::ProcRank,
];

/// The value type (and so width and absent pattern) of a proc column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// PMIX_UINT16, 2 bytes, absent 0xFFFF.
    Uint16,
    /// PMIX_UINT32, 4 bytes, absent 0xFFFFFFFF.
    Uint32,
    /// PMIX_PROC_RANK, 4 bytes, absent 0xFFFFFFFF.
    ProcRank,
}

impl ColumnKind {
    pub const fn width(self) -> usize {
        match self {
            ColumnKind::Uint16 => 2,
            ColumnKind::Uint32 | ColumnKind::ProcRank => 4,
        }
    }
}

/// The entry hash of format.md section 6 ("Lookup").
pub const fn entry_hash(class: u16, id: u32, key_id: u32) -> u64 {
    fmix64(((class as u64) << 56) ^ ((key_id as u64) << 32) ^ id as u64)
}

/// MurmurHash3's 64-bit finalizer: a bijection, so distinct (class, id, key_id) never collide in
/// the full 64 bits.
pub const fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// The key hash of format.md sections 5 and 6.
pub fn key_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Round `n` up to a multiple of `align` (a power of two). `None` on overflow.
pub const fn align_up(n: u64, align: u64) -> Option<u64> {
    match n.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

/// Hash-index size for `count` items: 0 when empty, else the power of two >= 2 * count.
pub const fn slots_for(count: usize) -> usize {
    if count == 0 {
        0
    } else {
        (count * 2).next_power_of_two()
    }
}
