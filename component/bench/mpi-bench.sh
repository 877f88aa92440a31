#!/usr/bin/env bash
# MPI_Init time and PMIx_Get p50 inside Open MPI jobs, side by side in one run, for one OpenPMIx
# line: OpenPMIx hash, the clients' default store (ds21 on 4.2, shmem2 on 5.0, shmem3 on 7.0), rshm's gds
# component, and the component plus the preloaded PMIx_Get (librshm_client_preload.so answers from the
# store the component's server exported).
#
#   bash component/bench/mpi-bench.sh [NP] [ROUNDS] [GETS]            (defaults 4 3 4096)
#   LINE=5.0 bash component/bench/mpi-bench.sh [NP] [ROUNDS] [GETS]   OpenPMIx 5.0.7 / Open MPI
#       5.0.7 in the Debian 13 chroot (scripts/chroot.sh; root only)
#   LINE=7.0 bash component/bench/mpi-bench.sh [NP] [ROUNDS] [GETS]   OpenPMIx 7.0.0rc1 / Open MPI
#       6.0.0rc2 in the Debian unstable chroot (root only)
#
# Get rank = PMIX_LOCAL_RANK of a peer (a reserved proc key); Get card = a peer's 64 B card
# after a collecting fence. Each round runs every column once (interleaved, so machine noise
# hits them alike); each line is the median over ranks and rounds. Ranks are oversubscribed on
# this node (2 cores here).
set -euo pipefail
cd "$(dirname "$0")/../.."
NP=${1:-4}; ROUNDS=${2:-3}; GETS=${3:-4096}
LINE=${LINE:-4.2}
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
if [ "$LINE" != 4.2 ] && [ -z "${RSHM_IN_CHROOT:-}" ]; then
  # The Rust half is built here; the line's component is compiled inside, against its headers.
  case "$LINE" in 5.0) suite=trixie ;; 7.0) suite=sid ;; *) echo "mpi-bench: LINE must be 4.2, 5.0 or 7.0" >&2; exit 2 ;; esac
  [ "$(id -u)" -eq 0 ] || { echo "mpi-bench: LINE=$LINE needs root (the $suite chroot)" >&2; exit 2; }
  case "$TARGET" in "$PWD"/*) ;; *) echo "mpi-bench: the target directory must be inside the checkout" >&2; exit 2 ;; esac
  cargo build -q --release -p rshm-component -p rshm-client-preload
  bash scripts/chroot.sh build "$suite" >/dev/null
  exec bash scripts/chroot.sh run --bind-rw "$PWD" "$suite" env RSHM_IN_CHROOT=1 LINE="$LINE" \
    CARGO_TARGET_DIR="/rshm/${TARGET#"$PWD"/}" bash /rshm/component/bench/mpi-bench.sh "$NP" "$ROUNDS" "$GETS"
fi
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
PRELOAD="$TARGET/release/librshm_client_preload.so"
if [ "$LINE" = 4.2 ]; then
  make -s -C component >/dev/null
  cargo build -q --release -p rshm-client-preload
  COMP="$TARGET/release/gds-component"
  DEFAULT=ds21
else
  COMP="$TARGET/release/gds-component-$LINE"
  make -s -C component PMIX_LINE="$LINE" RSHM_A="$TARGET/release/librshm_component.a" OUT="$COMP" >/dev/null
  DEFAULT=shmem2
  [ "$LINE" != 7.0 ] || DEFAULT=shmem3
  # Shared memory between the ranks (the TCP BTL finds no pairing in a chroot).
  export OMPI_MCA_btl=self,sm
fi
mpicc -O2 $(pkg-config --cflags pmix) -o "$OUT/mpi_init_get" component/bench/mpi_init_get.c \
  $(pkg-config --libs pmix)
COLUMNS=("hash" "$DEFAULT" "rshm-component" "rshm-component+preload")

run() { # column round
  local gds=hash pre=""
  case $1 in
    ds21) gds="ds21,hash" ;;
    shmem2) gds="shmem2,hash" ;;
    shmem3) gds="shmem3,hash" ;;
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

echo "mpi-bench: OpenPMIx $(pkg-config --modversion pmix), np=$NP rounds=$ROUNDS gets=$GETS cores=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
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
