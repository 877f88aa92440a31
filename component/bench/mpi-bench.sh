#!/usr/bin/env bash
# MPI_Init time and PMIx_Get p50 inside Open MPI 4.1.4 jobs, side by side in one run:
# OpenPMIx hash, OpenPMIx ds21, rshm's gds component, and the component plus the preloaded
# PMIx_Get (librshm_preload.so answers from the store the component's server exported).
#
#   bash component/bench/mpi-bench.sh [NP] [ROUNDS] [GETS]     (defaults 4 3 4096)
#
# Get rank = PMIX_LOCAL_RANK of a peer (a reserved proc key); Get card = a peer's 64 B card
# after a collecting fence. Each round runs every column once (interleaved, so machine noise
# hits them alike); each line is the median over ranks and rounds, and the script fails (status
# 1) when one cannot be computed (a run that printed no number). Ranks are oversubscribed on
# this node (2 cores here).
set -euo pipefail
cd "$(dirname "$0")/../.."
NP=${1:-4}; ROUNDS=${2:-3}; GETS=${3:-4096}
make -s -C component >/dev/null
cargo build -q --release -p rshm-preload
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
mpicc -O2 $(pkg-config --cflags pmix) -o "$OUT/mpi_init_get" component/bench/mpi_init_get.c \
  $(pkg-config --libs pmix)
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
COMP="$TARGET/release/gds-component"
PRELOAD="$TARGET/release/librshm_preload.so"
COLUMNS=("hash" "ds21" "rshm-component" "rshm-component+preload")

run() { # column round
  local gds=hash pre=""
  case $1 in
    ds21) gds="ds21,hash" ;;
    rshm-component) gds="rshm,hash" ;;
    rshm-component+preload) gds="rshm,hash"; pre=$PRELOAD ;;
  esac
  mkdir -p "$OUT/gds-$1" "$OUT/preload-$1"
  PMIX_MCA_mca_base_component_path=$COMP PMIX_MCA_gds=$gds RSHM_GDS_STATS="$OUT/gds-$1" \
    RSHM_PRELOAD_STATS="$OUT/preload-$1" \
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$NP" \
      -x PMIX_MCA_mca_base_component_path -x PMIX_MCA_gds -x RSHM_GDS_STATS \
      ${pre:+-x RSHM_PRELOAD_STATS -x LD_PRELOAD=$pre} \
      "$OUT/mpi_init_get" "$GETS" >>"$OUT/$1.txt"
}

echo "mpi-bench: np=$NP rounds=$ROUNDS gets=$GETS cores=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for c in "${COLUMNS[@]}"; do
    printf '\r  round %s/%s: %-24s' "$r" "$ROUNDS" "$c" >&2
    run "$c" "$r"
  done
done
printf '\r%60s\r' '' >&2

# The median over ranks and rounds of a column's KEY, divided by DIV, as FMT (median.awk). An
# assignment, so that a value that cannot be computed ends the script (set -e) with status 1.
median() { awk -v key="$2" -v div="$3" -v fmt="$4" -f component/bench/median.awk "$OUT/$1.txt"; }
printf '%-24s %12s %10s %14s %14s %14s\n' column "MPI_Init" fence "Get rank p50" "Get card p50" "ranks"
for c in "${COLUMNS[@]}"; do
  init=$(median "$c" init_us 1000 %.1f)
  fence=$(median "$c" fence_us 1 %.0f)
  job=$(median "$c" job_p50_ns 1 %.0f)
  card=$(median "$c" card_p50_ns 1 %.0f)
  printf '%-24s %9s ms %7s µs %11s ns %11s ns %14s\n' "$c" "$init" "$fence" "$job" "$card" \
    "$(wc -l <"$OUT/$c.txt")"
done
# Who answered: the component's and the preload's counters (a file per process, at exit).
sum() { cat "$1"/* 2>/dev/null | awk '{for (i=1;i<NF;i++) if ($i ~ /^[a-z]+$/ && $(i+1) ~ /^[0-9]+$/) s[$i]+=$(i+1)} END {for (k in s) printf "%s %d  ", k, s[k]}'; }
for c in rshm-component rshm-component+preload; do
  echo "$c: gds component: $(sum "$OUT/gds-$c")| preload: $(sum "$OUT/preload-$c")"
done
