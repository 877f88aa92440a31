//! docs/format.md against `rshm_gds::layout`: every field table, the constants, the entry classes and
//! the proc columns of the document must match the code, and every field of every layout
//! struct must be documented. A layout change without the document (or the reverse) fails here.
//!
//! The document's machine-read parts: a caption line `` Fields of `Name`, N bytes at offset B: ``
//! followed by a table `| off | size | field | meaning |` whose `field` cells are `` `name` ``
//! and whose `off` counts from the file's (or the record's) start, B being where the struct
//! begins; the table after `Constants`; the tables headed `| class |` and `| column |`; and the
//! blocked-column table (the one `| off |` table without such a caption), whose numbers are
//! used to decode a blocked column the writer made.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

use rshm_gds::jobdata::columns::COLUMN_KEYS;
use rshm_gds::layout::{
    self, Entry, Header, KeyEntry, Kind, Realm, RootHeader, TableHeader, TableRef, ANCHOR_LEN,
    COLUMN_KINDS, HEADER_LEN, ROOT_AT_OFF, WITHDRAWN_OFF,
};

const DOC: &str = include_str!("../../docs/format.md");

/// (field, offset, size) of one struct.
type Fields = Vec<(&'static str, usize, usize)>;

fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The fields of a struct, in declaration order. The destructuring pattern does not compile
/// when the struct gains a field this list lacks: every field is checked against the document.
macro_rules! fields {
    ($ty:ident { $($f:ident),* $(,)? }) => {{
        #[allow(dead_code)]
        fn exhaustive(v: $ty) {
            let $ty { $($f: _),* } = v;
        }
        vec![$((stringify!($f), offset_of!($ty, $f), field_size(|s: &$ty| &s.$f))),*]
    }};
}

/// The code's view of every documented struct: name -> (size, fields).
fn structs() -> BTreeMap<&'static str, (usize, Fields)> {
    let mut m = BTreeMap::new();
    m.insert(
        "Header",
        (
            size_of::<Header>(),
            fields!(Header {
                magic,
                format_major,
                format_minor,
                byte_order,
                kind,
                state,
                generation,
                total_len,
                header_len,
                value_format,
                writer_pid,
                writer_uid,
                reserved,
            }),
        ),
    );
    // The anchor has no struct: its two words' offsets, the rest reserved up to ANCHOR_LEN.
    let body = ANCHOR_LEN as usize - HEADER_LEN;
    let word = ROOT_AT_OFF - HEADER_LEN;
    m.insert(
        "anchor",
        (
            body,
            vec![
                ("root_at", word, 8),
                ("withdrawn", WITHDRAWN_OFF - HEADER_LEN, 8),
                ("reserved", word + 16, body - word - 16),
            ],
        ),
    );
    m.insert(
        "RootHeader",
        (
            size_of::<RootHeader>(),
            fields!(RootHeader {
                ref_count,
                reserved,
                refs_off,
                names_off,
                names_len,
            }),
        ),
    );
    m.insert(
        "TableRef",
        (
            size_of::<TableRef>(),
            fields!(TableRef {
                name_hash,
                name_off,
                name_len,
                nsid,
                part,
                table_at,
            }),
        ),
    );
    m.insert(
        "TableHeader",
        (
            size_of::<TableHeader>(),
            fields!(TableHeader {
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
                rank_count,
                column_mask,
                columns_off,
                column_blocks,
                reserved,
            }),
        ),
    );
    m.insert(
        "KeyEntry",
        (
            size_of::<KeyEntry>(),
            fields!(KeyEntry {
                hash,
                str_off,
                str_len,
            }),
        ),
    );
    m.insert(
        "Entry",
        (
            size_of::<Entry>(),
            fields!(Entry {
                class,
                flags,
                id,
                key_id,
                value_len,
                value_off,
            }),
        ),
    );
    m
}

/// Where each struct starts in its file (0 for records): the document's offsets are from there.
fn bases() -> BTreeMap<&'static str, usize> {
    BTreeMap::from([
        ("Header", 0),
        ("anchor", HEADER_LEN),
        ("RootHeader", HEADER_LEN),
        ("TableRef", 0),
        ("TableHeader", HEADER_LEN),
        ("KeyEntry", 0),
        ("Entry", 0),
    ])
}

/// Every constant the document's constants table must list, with its value.
fn constants() -> BTreeMap<&'static str, u64> {
    BTreeMap::from([
        ("FORMAT_MAJOR", layout::FORMAT_MAJOR as u64),
        ("FORMAT_MINOR", layout::FORMAT_MINOR as u64),
        ("BYTE_ORDER_MARK", layout::BYTE_ORDER_MARK as u64),
        ("VALUE_FORMAT", layout::VALUE_FORMAT as u64),
        ("HEADER_LEN", HEADER_LEN as u64),
        ("STATE_OFF", layout::STATE_OFF as u64),
        ("STATE_BUILDING", rshm_gds::protocol::STATE_BUILDING as u64),
        ("STATE_READY", rshm_gds::protocol::STATE_READY as u64),
        ("ANCHOR_LEN", ANCHOR_LEN),
        ("ROOT_AT_OFF", ROOT_AT_OFF as u64),
        ("WITHDRAWN_OFF", WITHDRAWN_OFF as u64),
        ("PLACE_PACKED", layout::PLACE_PACKED),
        ("PACK_ALIGN", layout::PACK_ALIGN as u64),
        ("MAX_PACK_SEQ", layout::MAX_PACK_SEQ as u64),
        ("REGION_ALIGN", layout::REGION_ALIGN as u64),
        ("VALUE_ALIGN", layout::VALUE_ALIGN as u64),
        ("MAX_KEYS", layout::MAX_KEYS as u64),
        ("MAX_KEY_LEN", layout::MAX_KEY_LEN as u64),
        ("MAX_NSPACE_LEN", layout::MAX_NSPACE_LEN as u64),
        ("ENTRY_RAW_BYTES", layout::ENTRY_RAW_BYTES as u64),
        (
            "NODEID_COLUMN",
            rshm_gds::jobdata::columns::NODEID_COLUMN as u64,
        ),
        ("Kind::Anchor", Kind::Anchor as u64),
        ("Kind::Root", Kind::Root as u64),
        ("Kind::Table", Kind::Table as u64),
        ("Kind::Pack", Kind::Pack as u64),
    ])
}

/// A markdown table: its header cells and its rows' cells, and the caption (the last non-blank
/// line before it).
struct Table<'d> {
    caption: &'d str,
    header: Vec<&'d str>,
    rows: Vec<Vec<&'d str>>,
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

fn tables(doc: &str) -> Vec<Table<'_>> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('|') {
            i += 1;
            continue;
        }
        let caption = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .copied()
            .unwrap_or("");
        let header = cells(lines[i]);
        let mut rows = Vec::new();
        i += 2; // the header and the |---| line
        while i < lines.len() && lines[i].starts_with('|') {
            rows.push(cells(lines[i]));
            i += 1;
        }
        out.push(Table {
            caption,
            header,
            rows,
        });
    }
    out
}

/// A number as the document writes it: decimal or 0x hex.
fn number(cell: &str) -> u64 {
    let s = cell.trim();
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

/// The text inside the first pair of backticks of `cell`.
fn ticked(cell: &str) -> &str {
    let rest = cell
        .split_once('`')
        .unwrap_or_else(|| panic!("no `name` in {cell:?}"))
        .1;
    rest.split_once('`').expect("closing backtick").0
}

/// (struct name, size, base) from `` Fields of `Name`, N bytes at offset B: ``.
fn field_caption(caption: &str) -> Option<(&str, usize, usize)> {
    let rest = caption.strip_prefix("Fields of `")?;
    let (name, rest) = rest.split_once("`, ")?;
    let (size, rest) = rest.split_once(" bytes at offset ")?;
    let base = rest.trim_end_matches(':');
    Some((name, number(size) as usize, number(base) as usize))
}

#[test]
fn the_title_names_the_code_s_format_version() {
    let title = DOC.lines().next().unwrap();
    let want = format!("version {}.{} ", layout::FORMAT_MAJOR, layout::FORMAT_MINOR);
    assert!(title.contains(&want), "{title:?} lacks {want:?}");
}

#[test]
fn every_field_table_matches_the_layout_structs() {
    let code = structs();
    let bases = bases();
    let mut seen = Vec::new();
    for t in tables(DOC) {
        let is_fields = t.header.first() == Some(&"off") && t.header.get(2) == Some(&"field");
        let caption = field_caption(t.caption);
        if !is_fields {
            assert!(
                caption.is_none(),
                "caption {:?} on another table",
                t.caption
            );
            continue;
        }
        let Some((name, size, base)) = caption else {
            // The one field table that is not a layout struct (column_blocks.rs holds it).
            assert!(
                t.caption
                    .contains("Offsets below count from the column's start")
                    || t.caption
                        .contains("`gds/src/table/column_blocks.rs` holds it"),
                "field table without a `Fields of` caption: {:?}",
                t.caption
            );
            continue;
        };
        let (code_size, fields) = code
            .get(name)
            .unwrap_or_else(|| panic!("format.md documents unknown struct {name}"));
        assert_eq!(size, *code_size, "size of {name}");
        assert_eq!(base, bases[name], "offset of {name} in its file");
        let doc: Vec<(&str, usize, usize)> = t
            .rows
            .iter()
            .map(|r| (ticked(r[2]), number(r[0]) as usize, number(r[1]) as usize))
            .collect();
        let want: Vec<(&str, usize, usize)> = fields
            .iter()
            .map(|&(f, off, sz)| (f, off + base, sz))
            .collect();
        assert_eq!(
            doc, want,
            "{name}: (field, offset, size) rows, in order, against rshm_gds::layout"
        );
        let covered: usize = fields.iter().map(|f| f.2).sum();
        assert_eq!(covered, size, "{name}: fields leave a gap or overlap");
        seen.push(name);
    }
    seen.sort_unstable();
    let all: Vec<&str> = code.keys().copied().collect();
    assert_eq!(seen, all, "every layout struct is documented exactly once");
}

#[test]
fn the_constants_table_matches_the_code() {
    let t = tables(DOC)
        .into_iter()
        .find(|t| t.header.first() == Some(&"constant"))
        .expect("a | constant | value | table");
    let mut want = constants();
    let mut magic = false;
    for r in &t.rows {
        let name = ticked(r[0]);
        if name == "MAGIC" {
            let text = ticked(r[1]).trim_matches('"').replace("\\0", "\0");
            assert_eq!(text.as_bytes(), layout::MAGIC, "MAGIC");
            magic = true;
            continue;
        }
        let value = want
            .remove(name)
            .unwrap_or_else(|| panic!("format.md lists {name}, unknown to this test"));
        assert_eq!(number(r[1]), value, "{name}");
    }
    assert!(magic, "MAGIC is documented");
    assert!(want.is_empty(), "undocumented constants: {want:?}");
}

#[test]
fn the_class_table_is_every_defined_class() {
    let t = tables(DOC)
        .into_iter()
        .find(|t| t.header.first() == Some(&"class"))
        .expect("a | class | realm | id | table");
    let mut documented = Vec::new();
    for r in &t.rows {
        let class = number(r[0]) as u16;
        let realm = Realm::from_class_id(class, 77)
            .unwrap_or_else(|| panic!("class {class} is documented but not defined"));
        let word = r[1].split([' ', ':']).next().unwrap();
        let ok = match realm {
            Realm::Session(77) => word == "session",
            Realm::Job => word == "job",
            Realm::App(77) => word == "app",
            Realm::Node(77) => word == "node",
            Realm::Proc(77) => word == "proc",
            Realm::Meta => word == "meta",
            Realm::Posted { rank: 77, scope } => {
                word == "posted" && r[1].contains(&format!("({scope})"))
            }
            _ => false,
        };
        assert!(
            ok,
            "class {class}: document says {:?}, code {realm:?}",
            r[1]
        );
        assert_eq!(realm.class_id().0, class, "class {class} round trip");
        documented.push(class);
    }
    let defined: Vec<u16> = (0..=u16::MAX)
        .filter(|&c| layout::class_defined(c))
        .collect();
    assert_eq!(documented, defined, "the defined classes, in order");
}

#[test]
fn the_column_table_is_layout_columns() {
    let t = tables(DOC)
        .into_iter()
        .find(|t| t.header.first() == Some(&"column"))
        .expect("a | column | key | ... table");
    assert_eq!(t.rows.len(), COLUMN_KINDS.len(), "one row per column");
    assert_eq!(COLUMN_KEYS.len(), COLUMN_KINDS.len());
    for (i, (r, (key, kind))) in t
        .rows
        .iter()
        .zip(COLUMN_KEYS.iter().zip(COLUMN_KINDS))
        .enumerate()
    {
        assert_eq!(number(r[0]) as usize, i);
        assert_eq!(ticked(r[1]), *key, "column {i}");
        assert_eq!(number(r[3]) as usize, kind.width(), "column {i} width");
        let absent = (1u64 << (8 * kind.width())) - 1;
        assert_eq!(number(r[4]), absent, "column {i} absent pattern");
        let ty = match kind {
            layout::ColumnKind::Uint16 => "PMIX_UINT16",
            layout::ColumnKind::Uint32 => "PMIX_UINT32",
            layout::ColumnKind::ProcRank => "PMIX_PROC_RANK",
        };
        assert_eq!(r[2], ty, "column {i} type");
    }
}

/// The blocked-column table's numbers, read from the document: (bytes before the descriptors,
/// bytes per descriptor, ranks per block, the `step` that marks a stored block).
fn blocked_layout() -> (usize, usize, usize, u32) {
    let t = tables(DOC)
        .into_iter()
        .find(|t| t.header.first() == Some(&"off") && field_caption(t.caption).is_none())
        .expect("the blocked column table");
    let rows: Vec<(&str, &str, &str)> = t.rows.iter().map(|r| (r[0], r[1], r[2])).collect();
    assert_eq!(
        rows.len(),
        4,
        "dense_blocks, reserved, descriptors, stored values"
    );
    assert_eq!((number(rows[0].0), number(rows[0].1)), (0, 4));
    assert!(rows[0].2.starts_with("`dense_blocks`"));
    assert_eq!((number(rows[1].0), number(rows[1].1)), (4, 4));
    assert!(rows[1].2.starts_with("reserved"));
    let head = number(rows[2].0) as usize;
    let desc = number(rows[2].1.split(" x ").next().unwrap()) as usize;
    assert_eq!(rows[2].1, format!("{desc} x `blocks`"));
    assert_eq!(rows[3].0, format!("{head} + {desc} x `blocks`"));
    let block_ranks = rows[3].1.split(" x ").nth(1).map(number).unwrap() as usize;
    assert_eq!(rows[3].1, format!("`dense_blocks` x {block_ranks} x width"));
    let escape = rows[2].2.split("`step` = ").nth(1).unwrap();
    let escape = number(escape.split_whitespace().next().unwrap()) as u32;
    (head, desc, block_ranks, escape)
}

/// A blocked column decoded by the document's rules (format.md "Blocked columns") gives back
/// every value the writer was given: the document describes what the writer writes.
#[test]
fn a_blocked_column_decodes_by_the_document() {
    let (head, desc, block_ranks, escape) = blocked_layout();
    let ranks = 1000u32;
    // Local ranks of nodes of 50 (a line broken at most once a block), with two blocks of
    // scattered values, which only a stored block holds.
    let want: Vec<u16> = (0..ranks)
        .map(|r| match r / 32 {
            5 | 7 => (r.wrapping_mul(2_654_435_761) >> 20) as u16 % 1000,
            _ => (r % 50) as u16,
        })
        .collect();
    let mut t = rshm_gds::TableBuilder::with_ranks(ranks);
    t.block_columns_above(0);
    for (r, v) in want.iter().enumerate() {
        t.insert(
            Realm::Proc(r as u32),
            "pmix.lrank",
            &rshm_gds::Value::Uint16(*v),
        )
        .unwrap();
    }
    let b = rshm_gds::check::encode_store("ns", &t).unwrap().0;
    let u32_at = |off: usize| u32::from_ne_bytes(b[off..off + 4].try_into().unwrap());
    let th = |f: usize| HEADER_LEN + f;
    assert_eq!(u32_at(th(offset_of!(TableHeader, column_mask))), 1);
    assert_eq!(
        u32_at(th(offset_of!(TableHeader, column_blocks))),
        1,
        "the column is blocked"
    );
    let col = u64::from_ne_bytes(
        b[th(offset_of!(TableHeader, columns_off))..][..8]
            .try_into()
            .unwrap(),
    ) as usize;
    let blocks = (ranks as usize).div_ceil(block_ranks);
    let dense_blocks = u32_at(col) as usize;
    assert_eq!(u32_at(col + 4), 0, "reserved word");
    assert_eq!(dense_blocks, 2, "two stored blocks");
    let width = COLUMN_KINDS[0].width();
    let dense = col + head + desc * blocks;
    for (r, want) in want.iter().enumerate() {
        let d = col + head + r / block_ranks * desc;
        let (base0, step, base1, brk) = (u32_at(d), u32_at(d + 4), u32_at(d + 8), u32_at(d + 12));
        let i = (r % block_ranks) as u32;
        let got = if step == escape {
            assert!((base0 as usize) < dense_blocks);
            let at = dense + (base0 as usize * block_ranks + i as usize) * width;
            u16::from_ne_bytes(b[at..at + 2].try_into().unwrap()) as u32
        } else if i < brk {
            base0.wrapping_add(step.wrapping_mul(i))
        } else {
            base1.wrapping_add(step.wrapping_mul(i - brk))
        };
        assert_eq!(got, *want as u32, "rank {r}");
    }
    // The reader agrees (the same bytes through rshm_gds::check).
    assert!(rshm_gds::check::table_bytes(&b, &[]).unwrap() >= ranks as usize);
}

const PROTOCOL: &str = include_str!("../../docs/protocol.md");

/// Every step id (`P1`, `P1p`, `R5`, `C2`, ...) in `text`, whole words only.
fn step_ids(text: &str) -> std::collections::BTreeSet<String> {
    let b = text.as_bytes();
    let mut out = std::collections::BTreeSet::new();
    for (i, &c) in b.iter().enumerate() {
        let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if !before_ok || !matches!(c, b'P' | b'R' | b'C') {
            continue;
        }
        let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
        if digits == 0 {
            continue;
        }
        let mut end = i + 1 + digits;
        if end < b.len() && matches!(b[end], b'p' | b'n') {
            end += 1;
        }
        if end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            continue;
        }
        out.insert(text[i..end].to_string());
    }
    out
}

/// protocol.md's steps: (step, its "what" cell), from every table whose header starts `step`.
fn protocol_steps() -> BTreeMap<String, String> {
    let mut steps = BTreeMap::new();
    for t in tables(PROTOCOL) {
        if t.header.first() != Some(&"step") {
            continue;
        }
        for r in t.rows {
            assert!(
                steps.insert(r[0].to_string(), r[1].to_string()).is_none(),
                "step {} twice in protocol.md",
                r[0]
            );
        }
    }
    steps
}

/// The `protocol` module's functions: (name, the step its doc comment starts with).
fn protocol_functions() -> Vec<(String, String)> {
    let src = include_str!("../src/protocol/mod.rs");
    let mut out = Vec::new();
    let mut doc: Vec<&str> = Vec::new();
    for line in src.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim());
        } else if let Some(rest) = line.strip_prefix("pub fn ") {
            let name = rest.split('(').next().unwrap().to_string();
            let first = doc.first().copied().unwrap_or("");
            let step = first.split_whitespace().next().unwrap_or("").to_string();
            assert!(
                step_ids(&step).contains(&step),
                "protocol::{name}'s doc does not start with its step: {first:?}"
            );
            out.push((name, step));
            doc.clear();
        } else if !line.starts_with("#[") {
            doc.clear();
        }
    }
    out
}

/// Each function of the `protocol` module is the step its doc names, and protocol.md's row of
/// that step names the function; each `protocol::` function protocol.md names is one of them.
#[test]
fn protocol_md_steps_are_the_protocol_module_s_functions() {
    let steps = protocol_steps();
    let fns = protocol_functions();
    assert!(fns.len() >= 6, "{fns:?}");
    for (name, step) in &fns {
        let what = steps
            .get(step)
            .unwrap_or_else(|| panic!("protocol::{name} is step {step}, not in protocol.md"));
        assert!(
            what.contains(&format!("`protocol::{name}`")),
            "protocol.md's {step} does not name `protocol::{name}`: {what}"
        );
    }
    for (step, what) in &steps {
        for named in what.split("`protocol::").skip(1) {
            let name = named.split('`').next().unwrap();
            assert!(
                fns.iter().any(|(n, s)| n == name && s == step),
                "protocol.md's {step} names protocol::{name}, which is not that step's function"
            );
        }
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The steps the store's code names (in its comments, where each step runs) are protocol.md's
/// steps, and each of protocol.md's steps is named somewhere in the code.
#[test]
fn the_steps_named_in_the_code_are_protocol_md_s() {
    let steps = protocol_steps();
    let mut files = Vec::new();
    rust_sources(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut in_code = std::collections::BTreeSet::new();
    for f in files {
        for id in step_ids(&std::fs::read_to_string(&f).unwrap()) {
            assert!(
                steps.contains_key(&id),
                "{} names step {id}, which protocol.md lacks",
                f.display()
            );
            in_code.insert(id);
        }
    }
    for step in steps.keys() {
        assert!(
            in_code.contains(step),
            "protocol.md's {step} is named nowhere in gds/src"
        );
    }
}

/// The anchor's atomic words (format.md section 4) are protocol.md's shared words, each with
/// the steps that store and load it; the code's offsets of them are the field table's (checked
/// by `every_field_table_matches_the_layout_structs`).
#[test]
fn the_anchor_s_atomic_words_are_protocol_md_s_shared_words() {
    let anchor = tables(DOC)
        .into_iter()
        .find(|t| t.caption.starts_with("Fields of `anchor`"))
        .expect("the anchor's field table");
    let atomic: Vec<&str> = anchor
        .rows
        .iter()
        .filter(|r| r[3].starts_with("atomic"))
        .map(|r| ticked(r[2]))
        .collect();
    assert_eq!(atomic, ["root_at", "withdrawn"]);
    let shared = PROTOCOL
        .split("- **Shared words**:")
        .nth(1)
        .expect("protocol.md's Shared words")
        .split("\n- **")
        .next()
        .unwrap();
    for (word, store, load) in [("root_at", "P4", "R1"), ("withdrawn", "P6", "R5")] {
        let at = shared
            .find(&format!("`{word}`"))
            .unwrap_or_else(|| panic!("Shared words omit the anchor's `{word}`"));
        let said = &shared[at..];
        let said = &said[..said.find(')').unwrap_or(said.len())];
        assert!(
            said.contains(store) && said.contains(load),
            "`{word}`: {said}"
        );
        assert!(atomic.contains(&word));
    }
    assert!(
        shared.contains("`state`"),
        "Shared words omit the header's `state`"
    );
}

/// The step scanner: whole step ids only.
#[test]
fn step_ids_are_whole_words() {
    let ids: Vec<String> = step_ids("P1p, R5 (P6) PR3 xC1 C2x P1n. P10 R")
        .into_iter()
        .collect();
    assert_eq!(ids, ["P10", "P1n", "P1p", "P6", "R5"]);
}
