//! The workspace's sources, for the tests that scan them (exports.rs, unsafe_code.rs).

#![allow(dead_code)] // each test uses its own part

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace's crates: the `members` of its Cargo.toml, so that a crate added there is
/// scanned without being named in a test.
pub fn members() -> Vec<String> {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let list = &toml[toml.find("\nmembers").expect("members")..];
    let list = &list[list.find('[').expect("[") + 1..list.find(']').expect("]")];
    let members: Vec<String> = list
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    assert!(
        members.len() > 1,
        "members not read from Cargo.toml: {members:?}"
    );
    members
}

/// Every `.rs` file under `dir`, recursively, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// Every source file of every member crate (its `src/`).
pub fn workspace_sources() -> Vec<PathBuf> {
    members()
        .iter()
        .flat_map(|m| rust_files(&root().join(m).join("src")))
        .collect()
}

/// `src` without comments, and with every string and char literal's contents blanked (so their
/// braces and parentheses do not count).
pub fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x' or '\n'), not a lifetime.
            let end = b[i + 1..].iter().position(|&c| c == b'\'').unwrap_or(0) + i + 1;
            out.push_str("' '");
            i = end + 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}
