#!/usr/bin/env bash
# How much of an OpenPMIx 7.0 PMIx_Get the gds component answers is libpmix's own path: runs
# component/bench/fetch_floor.c (PMIx_Get against the module's fetch called alone, in the same
# client, batches of both interleaved) under Open MPI 6.0.0rc2's mpirun in the Debian unstable
# chroot (scripts/chroot.sh; root only). docs/performance.md.
#
#   bash component/bench/fetch-floor.sh [NP] [CALLS] [ROUNDS]     (defaults 2 100000 3)
#
# Per round, rank 0's line per case (job key, its own proc key, a peer's PMIX_HOSTNAME, a peer's
# card): p50 and least per-call time of PMIx_Get, of the module's fetch, and their difference
# (libpmix's share: its request parsing, caddies, the value's copy and release). A case libpmix
# does not send to the module in the caller's thread (a node-realm key: PMIX_HOSTNAME) shows
# the thread shift's cost there.
set -euo pipefail
cd "$(dirname "$0")/../.."
NP=${1:-2}; CALLS=${2:-100000}; ROUNDS=${3:-3}
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
if [ -z "${RSHM_IN_CHROOT:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "fetch-floor: needs root (the sid chroot)" >&2; exit 2; }
  case "$TARGET" in "$PWD"/*) ;; *) echo "fetch-floor: the target directory must be inside the checkout" >&2; exit 2 ;; esac
  cargo build -q --release -p rshm-component
  bash scripts/chroot.sh build sid >/dev/null
  exec bash scripts/chroot.sh run --bind-rw "$PWD" sid env RSHM_IN_CHROOT=1 \
    CARGO_TARGET_DIR="/rshm/${TARGET#"$PWD"/}" bash /rshm/component/bench/fetch-floor.sh "$NP" "$CALLS" "$ROUNDS"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,sm
OUT=$(mktemp -d); STORE=$(mktemp -d /dev/shm/fetch-floor.XXXXXX)
trap 'rm -rf "$OUT" "$STORE"' EXIT
COMP="$TARGET/release/gds-component-7.0"
make -s -C component PMIX_LINE=7.0 RSHM_A="$TARGET/release/librshm_component.a" OUT="$COMP" >/dev/null
INC=$(pkg-config --variable=includedir pmix)
cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$INC" -I"$INC/pmix" -o "$OUT/fetch_floor" \
  component/bench/fetch_floor.c $(pkg-config --libs pmix) -ldl
echo "fetch-floor: libpmix $(pkg-config --modversion pmix), $NP ranks on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  PMIX_MCA_gds=rshm,hash PMIX_MCA_mca_base_component_path="$COMP" RSHM_DIR="$STORE" \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$NP" \
    -x PMIX_MCA_gds -x PMIX_MCA_mca_base_component_path -x RSHM_DIR \
    "$OUT/fetch_floor" "$COMP/pmix_mca_gds_rshm.so" "$CALLS"
done
