#!/usr/bin/env bash
# The main job: a synthetic 100,000-rank job written through a real rshm store and read by 8
# separate reader processes. Extra arguments go to `rshm demo` (see `rshm help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p rshm-cli
exec ./target/release/rshm demo "$@"
