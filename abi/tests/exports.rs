//! Every `extern "C" fn` of the workspace (the sources of every crate its Cargo.toml lists:
//! the shims, both preloads, the component, pmi2, abi, and any crate added) runs its whole body
//! inside abi's panic boundary: the body is one call of `ffi_status`, `ffi_ptr`, `ffi_void` or
//! `ffi_or`, so a new export cannot skip it. The functions the committed headers declare, and
//! one export of each crate that has some, must all be among those found (the scan sees every
//! export).

mod workspace;

const HEADERS: &[&str] = &[
    "server-shim/include/rshm_server.h",
    "client-shim/include/rshm_client.h",
];
const BOUNDARY: &[&str] = &["ffi_status(", "ffi_ptr(", "ffi_void(", "ffi_or("];

/// The index just past the bracket matching the one at `open`.
fn matching(s: &[u8], open: usize) -> usize {
    let (o, c) = (s[open], if s[open] == b'{' { b'}' } else { b')' });
    let mut depth = 0;
    for (i, &x) in s.iter().enumerate().skip(open) {
        if x == o {
            depth += 1;
        } else if x == c {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    panic!("unbalanced brackets");
}

/// Each `extern "C" fn NAME` defined in `src`, with whether its body is one boundary call.
fn exports(src: &str) -> Vec<(String, bool)> {
    let code = workspace::code_only(src);
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("extern \"\" fn ") {
        let name_at = from + at + "extern \"\" fn ".len();
        from = name_at;
        let name: String = code[name_at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // a function pointer type
        }
        let params = name_at + name.len();
        let after_params = matching(b, params + code[params..].find('(').expect("("));
        let open = after_params + code[after_params..].find(['{', ';']).expect("body");
        if b[open] == b';' {
            continue; // a declaration
        }
        let close = matching(b, open);
        let body = code[open + 1..close - 1].trim();
        let body = body.strip_prefix("rshm_abi::").unwrap_or(body);
        let wrapped = BOUNDARY.iter().any(|f| body.starts_with(f)) && {
            let call_end = matching(b, open + 1 + code[open + 1..].find('(').expect("call"));
            matches!(code[call_end..close - 1].trim(), "" | ";")
        };
        found.push((name, wrapped));
    }
    found
}

#[test]
fn every_export_runs_inside_the_panic_boundary() {
    let files = workspace::workspace_sources();
    let mut all = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("read");
        for (name, wrapped) in exports(&src) {
            assert!(
                wrapped,
                "{}: extern \"C\" fn {name} does not run its whole body inside ffi_status / \
                 ffi_ptr / ffi_void / ffi_or",
                f.display()
            );
            all.push(name);
        }
    }
    for h in HEADERS {
        let text = std::fs::read_to_string(workspace::root().join(h)).expect("header");
        for line in text
            .lines()
            .filter(|l| !l.starts_with("//") && l.contains('('))
        {
            let name = line[..line.find('(').unwrap()]
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap();
            if name.starts_with("rshm_") {
                assert!(
                    all.iter().any(|n| n == name),
                    "{h}: {name} not found by the scan"
                );
            }
        }
    }
    for name in [
        "PMIx_Get",
        "rshm_gds42_fetch",
        "rshm_gds42_store_announced",
        "rshm_server_path",
        "rshm_client_get",
        "PMIx_server_init",
        "PMI2_Init",
    ] {
        assert!(
            all.iter().any(|n| n == name),
            "{name} not found by the scan"
        );
    }
}

#[test]
fn the_scan_finds_an_unwrapped_export() {
    let src = r#"
        type F = unsafe extern "C" fn(i32) -> i32;
        extern "C" { fn declared(x: i32); }
        #[no_mangle]
        pub extern "C" fn good(x: *const u8) -> usize { ffi_or(0, || { let s = "}{("; s.len() }) }
        #[no_mangle]
        pub unsafe extern "C" fn partly(x: i32) -> i32 { rshm_abi::ffi_or(0, || x); x }
        #[no_mangle]
        pub extern "C" fn bare() -> usize { 0 } // ffi_or(
    "#;
    assert_eq!(
        exports(src),
        [
            ("good".to_owned(), true),
            ("partly".to_owned(), false),
            ("bare".to_owned(), false)
        ]
    );
}
