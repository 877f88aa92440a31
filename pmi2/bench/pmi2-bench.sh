#!/usr/bin/env bash
# PMI2_KVS_Get (a peer's 64 B value after the fence) and PMI2_Info_GetJobAttr p50 through
# librshm_pmi2.so in an Open MPI 4.1.4 job: OpenPMIx hash (every read a PMIx_Get of libpmix)
# and the rshm component (reads from the store). Median over ranks.
#
#   bash pmi2/bench/pmi2-bench.sh [NP] [GETS]     (defaults 4 4096)
set -euo pipefail
cd "$(dirname "$0")/../.."
NP=${1:-4}; GETS=${2:-4096}
make -s -C component >/dev/null
cargo build -q --release -p rshm-pmi2 --lib
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
LIB="$TARGET/release"
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
cc -O2 -Ipmi2/include -o "$OUT/bench" pmi2/bench/pmi2_get_bench.c -L"$LIB" -lrshm_pmi2 \
  -Wl,-rpath,"$LIB"
export PMIX_MCA_mca_base_component_path="$TARGET/release/gds-component"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { awk -v k="$2" '{for (i=1;i<NF;i++) if ($i==k) print $(i+1)}' "$1" | median; }
echo "pmi2-bench: np=$NP gets=$GETS cores=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %18s %22s %20s\n' gds "KVS_Get p50" "GetJobAttr map p50" "GetJobAttr univ p50"
for gds in hash rshm,hash; do
  PMIX_MCA_gds=$gds timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$NP" \
    -x PMIX_MCA_gds -x PMIX_MCA_mca_base_component_path "$OUT/bench" "$GETS" >"$OUT/$gds.txt"
  printf '%-10s %15s ns %19s ns %17s ns\n' "$gds" "$(field "$OUT/$gds.txt" kvs_get_p50_ns)" \
    "$(field "$OUT/$gds.txt" mapping_p50_ns)" "$(field "$OUT/$gds.txt" universe_p50_ns)"
done
