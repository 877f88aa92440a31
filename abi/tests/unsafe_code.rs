//! Where `unsafe` may be, in every crate of the workspace: each crate root denies (or forbids)
//! `unsafe_code`, and the one module allowed it is named there, at its `mod` item, so that
//! reading a crate's root tells where its unsafe code is. A module that allows itself unsafe
//! code (`#![allow(unsafe_code)]` inside it), or an item of a module that does, is an exception
//! its crate root does not show.

mod workspace;

use std::path::Path;

/// Whether `path` is a crate root: `src/lib.rs`, `src/main.rs` or `src/bin/*.rs`.
fn is_root(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    (parent == Some("src") && matches!(name, "lib.rs" | "main.rs")) || parent == Some("bin")
}

/// The code of `src` with all whitespace removed (attributes are then found however written).
fn compact(src: &str) -> String {
    workspace::code_only(src)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Whether compacted `code` has an `allow` naming `unsafe_code` among its lints.
fn allows_unsafe(code: &str) -> bool {
    code.match_indices("allow(").any(|(at, _)| {
        let lints = code[at..].split(')').next().unwrap_or("");
        lints.split([',', '(']).any(|l| l == "unsafe_code")
    })
}

/// "path: what is wrong" for each file of `files` (path, source) that breaks the rule.
fn violations<'a>(files: impl IntoIterator<Item = (&'a Path, &'a str)>) -> Vec<String> {
    let mut found = Vec::new();
    for (path, src) in files {
        let code = compact(src);
        if is_root(path) {
            if !code.contains("#![deny(unsafe_code)]") && !code.contains("#![forbid(unsafe_code)]")
            {
                found.push(format!(
                    "{}: a crate root without #![deny(unsafe_code)]",
                    path.display()
                ));
            }
        } else if allows_unsafe(&code) {
            found.push(format!(
                "{}: allows unsafe_code itself; name the exception at the crate root \
                 (#[allow(unsafe_code)] mod ...;)",
                path.display()
            ));
        }
    }
    found
}

#[test]
fn unsafe_code_is_allowed_only_at_crate_roots() {
    let files: Vec<_> = workspace::workspace_sources()
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).expect("read");
            (p, src)
        })
        .collect();
    assert!(
        files.iter().any(|(p, _)| p.ends_with("topo/src/raw.rs")),
        "the scan missed topo"
    );
    let found = violations(files.iter().map(|(p, s)| (p.as_path(), s.as_str())));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_sees_attributes_not_comments() {
    let root = Path::new("x/src/lib.rs");
    let module = Path::new("x/src/m.rs");
    let bin = Path::new("x/src/bin/tool.rs");
    assert!(violations([(
        root,
        "#![deny(unsafe_code)]\n#[allow(unsafe_code)]\nmod raw;"
    )])
    .is_empty());
    assert!(violations([(bin, "#![forbid(unsafe_code)]")]).is_empty());
    assert!(violations([(module, "// #![allow(unsafe_code)] is not here\nfn f() {}")]).is_empty());
    assert_eq!(
        violations([(root, "// #![deny(unsafe_code)]\nmod raw;")]).len(),
        1
    );
    assert_eq!(violations([(bin, "fn main() {}")]).len(), 1);
    assert_eq!(
        violations([(module, "#![allow(unsafe_code)]\nfn f() {}")]).len(),
        1
    );
    assert_eq!(
        violations([(module, "#[allow(dead_code, unsafe_code)]\nfn f() {}")]).len(),
        1
    );
}
