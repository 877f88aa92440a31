//! Loom models of docs/protocol.md live in tests/; run with `--cfg gds_loom`.
