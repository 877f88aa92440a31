//! The crate's layering: the store (format, segments, directory, root and table segments,
//! publication, reader, writer) knows nothing of PMIx's job data or modex, which sit above it in
//! `jobdata/` and `modex/`. This test reads the store's sources and fails on any code that
//! names those modules (`use crate::jobdata`, `crate::modex::...`, `super::jobdata`, ...).
//! Comments and string literals may name them; only code counts. `lib.rs`, the crate root that
//! declares and re-exports every module, is not a store module.

use std::fs;
use std::path::{Path, PathBuf};

/// Directories under `src/` that hold the layers above the store.
const UPPER: [&str; 3] = ["jobdata", "modex", "psets"];

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The identifiers of `src`'s code: comments, string and char literals removed.
fn identifiers(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let (mut i, mut line) = (0, 1);
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
            }
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                line += usize::from(b[i] == b'\n');
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // A raw string (r"..", r#".."#) or byte string: skip it whole.
            let word = &src[start..i];
            if matches!(word, "r" | "br" | "b") && i < b.len() && matches!(b[i], b'"' | b'#') {
                let hashes = b[i..].iter().take_while(|&&h| h == b'#').count();
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                i += hashes + 1;
                while i < b.len() && !b[i..].starts_with(&close) {
                    line += usize::from(b[i] == b'\n');
                    i += if word == "b" && b[i] == b'\\' { 2 } else { 1 };
                }
                i += close.len();
                continue;
            }
            out.push((line, word.to_string()));
        } else {
            i += 1;
        }
    }
    out
}

/// Where the store's code names an upper layer: "path:line: name".
fn violations(src_dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src_dir, &mut files);
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src_dir).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top);
        if UPPER.contains(&top) || rel == Path::new("lib.rs") {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        for (line, word) in identifiers(&text) {
            if UPPER.contains(&word.as_str()) {
                found.push(format!("{}:{line}: {word}", rel.display()));
            }
        }
    }
    found
}

#[test]
fn store_modules_do_not_name_jobdata_or_modex() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "store modules reference the layers above them:\n{}",
        found.join("\n")
    );
}

/// The scanner itself: code references are found, comments and strings are not.
#[test]
fn the_scanner_sees_code_not_comments_or_strings() {
    let words = |s: &str| -> Vec<String> { identifiers(s).into_iter().map(|(_, w)| w).collect() };
    assert_eq!(
        words("use crate::jobdata::keys;"),
        ["use", "crate", "jobdata", "keys"]
    );
    assert_eq!(words("super::modex::x()"), ["super", "modex", "x"]);
    assert!(words(
        "// jobdata\n/* modex /* nested */ jobdata */ \"jobdata\" r#\"modex\"# b\"modex\""
    )
    .is_empty());
    assert_eq!(identifiers("a\n// c\nb")[1], (3, "b".to_string()));

    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("jobdata")).unwrap();
    fs::write(dir.path().join("jobdata/mod.rs"), "use crate::table;").unwrap();
    fs::write(dir.path().join("lib.rs"), "pub mod jobdata;").unwrap();
    fs::write(dir.path().join("table.rs"), "// jobdata::keys\nfn f() {}").unwrap();
    assert!(violations(dir.path()).is_empty());
    fs::write(
        dir.path().join("table.rs"),
        "\nuse crate::jobdata::keys::meta;",
    )
    .unwrap();
    assert_eq!(violations(dir.path()), ["table.rs:2: jobdata"]);
}
