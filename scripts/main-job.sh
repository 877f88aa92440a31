#!/usr/bin/env bash
# The main job: a synthetic 100,000-rank job written through a real rshm store and read by 8
# separate reader processes. Extra arguments go to `rshm demo` (see `rshm help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p rshm-cli
"${CARGO_TARGET_DIR:-target}/release/rshm" demo "$@"

# Then the same job side by side with OpenPMIx (the scale harness, docs/performance.md
# "Scale harness"): rshm direct / gds component / preloaded PMIx_Get / component + preload
# against OpenPMIx hash and ds21, M = 1k, 10k, 100k, 8 clients, ~40 s. Skipped when tools/pmix-host cannot build (no
# OpenPMIx) or with RSHM_SCALE=0; RSHM_SCALE_ARGS replaces the arguments.
if [ "${RSHM_SCALE:-1}" = 0 ]; then
  exit 0
fi
if ! make -s -C tools/pmix-host >/dev/null 2>&1; then
  echo "main-job: tools/pmix-host does not build (OpenPMIx missing?): skipping the OpenPMIx comparison"
  exit 0
fi
echo
echo "== the same job under OpenPMIx 4.2.2 and rshm, side by side (target/rshm-bench/scale/)"
# shellcheck disable=SC2086
cargo run --release -q -p rshm-benches --bin scale -- ${RSHM_SCALE_ARGS:---max-m 100000}
