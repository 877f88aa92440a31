//! Loom models of docs/protocol.md live in tests/; run with `--cfg gds_loom --cfg crossbeam_loom`
//! (crossbeam-epoch reads its own cfg; gds/src/sync.rs refuses `gds_loom` without it).

#![forbid(unsafe_code)]
