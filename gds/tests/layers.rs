//! The crate's layering: the store (format, segments, directory, root and table segments,
//! publication, reader, writer) knows nothing of PMIx's job data or modex, which sit above it in
//! `jobdata/` and `modex/`. This test reads the store's sources and fails on any code that
//! names those modules (`use crate::jobdata`, `crate::modex::...`, `super::jobdata`, ...).
//! Comments and string literals may name them; only code counts. `lib.rs`, the crate root that
//! declares and re-exports every module, is not a store module.
//!
//! Nor does the store's code name PMIx (`store_code_names_no_pmix`): no string literal holds
//! `pmix` (any case: `"pmix.nodeid"`, `"PMIX_..."`), and no identifier holds `pmix`, `modex`
//! or `posted` (any case), except `Posted`, the name format.md section 6 gives entry classes
//! 7..=9 (`Realm::Posted`). `value` and `valueref`, the PMIx value model the store's tables
//! hold, are not store modules for this rule. Comments may name anything.

use std::fs;
use std::path::{Path, PathBuf};

/// Directories under `src/` that hold the layers above the store.
const UPPER: [&str; 3] = ["jobdata", "modex", "psets"];

/// Top-level modules that are PMIx's value model: exempt from the no-PMIx-names rule only.
const VALUE_MODEL: [&str; 2] = ["value", "valueref"];

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
    tokens(src)
        .into_iter()
        .filter_map(|(line, t)| match t {
            Token::Ident(w) => Some((line, w)),
            Token::Str(_) => None,
        })
        .collect()
}

/// A token of code: an identifier, or a string literal's text (escapes left as written).
#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
}

/// The identifiers and string literals of `src`'s code, with their lines; comments skipped.
fn tokens(src: &str) -> Vec<(usize, Token)> {
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
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\'', 'é') is skipped; otherwise a lifetime's quote.
            let rest = &src[i + 1..];
            let first = rest.chars().next().map_or(0, char::len_utf8);
            if rest.starts_with('\\') {
                i += 3 + rest[2..].find('\'').unwrap_or(0) + 1;
            } else if rest[first..].starts_with('\'') {
                i += 1 + first + 1;
            } else {
                i += 1;
            }
        } else if c == b'"' {
            let (at, start) = (line, i + 1);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                line += usize::from(b[i] == b'\n');
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push((at, Token::Str(src[start..i.min(b.len())].to_string())));
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
                let (at, start) = (line, i);
                while i < b.len() && !b[i..].starts_with(&close) {
                    line += usize::from(b[i] == b'\n');
                    i += if word == "b" && b[i] == b'\\' { 2 } else { 1 };
                }
                out.push((at, Token::Str(src[start..i.min(b.len())].to_string())));
                i += close.len();
                continue;
            }
            out.push((line, Token::Ident(word.to_string())));
        } else {
            i += 1;
        }
    }
    out
}

/// The store's source files under `src_dir`, with their top-level module, skipping the layers
/// above the store and `lib.rs`.
fn store_sources(src_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    sources(src_dir, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src_dir).unwrap().to_path_buf();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top).to_string();
        if UPPER.contains(&top.as_str()) || rel == Path::new("lib.rs") {
            continue;
        }
        out.push((rel, top));
    }
    out
}

/// Whether a token of store code names PMIx (the rule in this file's header).
fn names_pmix(t: &Token) -> bool {
    match t {
        Token::Str(s) => s.to_ascii_lowercase().contains("pmix"),
        Token::Ident(w) => {
            let w = w.to_ascii_lowercase();
            t != &Token::Ident("Posted".into())
                && ["pmix", "modex", "posted"].iter().any(|n| w.contains(n))
        }
    }
}

/// Where the store's code names PMIx: "path:line: token".
fn pmix_names(src_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, top) in store_sources(src_dir) {
        if VALUE_MODEL.contains(&top.as_str()) {
            continue;
        }
        let text = fs::read_to_string(src_dir.join(&rel)).unwrap();
        for (line, t) in tokens(&text) {
            if names_pmix(&t) {
                found.push(format!("{}:{line}: {t:?}", rel.display()));
            }
        }
    }
    found
}

#[test]
fn store_code_names_no_pmix() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = pmix_names(&src);
    assert!(
        found.is_empty(),
        "store modules name PMIx (keys, parts, posted data belong to the layers above):\n{}",
        found.join("\n")
    );
}

/// The rule itself: PMIx keys in strings and PMIx-named identifiers are found in store code;
/// comments, the upper layers, the value model and the format's `Posted` class are not.
#[test]
fn the_pmix_rule_sees_keys_and_names_in_store_code_only() {
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, text: &str| {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    put(
        "modex/mod.rs",
        "const K: &str = \"pmix.foo\"; fn posted() {}",
    );
    put("lib.rs", "pub mod modex; const P: u32 = 2; // pmix");
    put("value.rs", "pub const PMIX_STRING: u16 = 3;");
    put(
        "writer/mod.rs",
        "// pmix.foo, posted data\nfn f(r: Realm) { if let Realm::Posted { .. } = r {} }",
    );
    assert!(pmix_names(dir.path()).is_empty());
    put(
        "writer/mod.rs",
        "fn f() {}\nconst K: &str = \"pmix.foo\";\nfn is_posted() {}\nconst E: &str = r\"PMIX_X\";\nuse m::Modex;",
    );
    assert_eq!(
        pmix_names(dir.path()),
        [
            "writer/mod.rs:2: Str(\"pmix.foo\")",
            "writer/mod.rs:3: Ident(\"is_posted\")",
            "writer/mod.rs:4: Str(\"PMIX_X\")",
            "writer/mod.rs:5: Ident(\"Modex\")",
        ]
    );
}

/// Where the store's code names an upper layer: "path:line: name".
fn violations(src_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, _) in store_sources(src_dir) {
        let text = fs::read_to_string(src_dir.join(&rel)).unwrap();
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
    assert_eq!(
        words("m(b'\"', '\\'', 'é'); fn f<'a>(x: &'a str) {} \"modex\""),
        ["m", "b", "fn", "f", "a", "x", "a", "str"]
    );

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
