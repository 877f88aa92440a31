//! Benchmarks live in benches/; see docs/performance.md.
