#!/usr/bin/env bash
# The PMI-2 differential against Slurm: pmi2/tests/c/pmi2_check.c built twice, against Slurm's
# libpmi2 (`slurm/pmi2.h`, -lpmi2; Debian's libpmi2-0-dev) run by `srun --mpi=pmi2`, and against
# librshm_pmi2.so run by `srun --mpi=pmix` with rshm's gds component, on a one-node cluster of
# its own (tools/slurm/cluster.sh). Prints both answers' differences (docs/pmi2.md explains
# them) and checks that the rshm run read the store. Needs root (the daemons).
#
#   bash pmi2/tests/slurm-diff.sh [TASKS]          (default 4)
#     RSHM_SLURM_CLUSTER=path/cluster.sh   another cluster script (default tools/slurm/cluster.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
NTASKS=${1:-4}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CLUSTER_SH=${RSHM_SLURM_CLUSTER:-$ROOT/tools/slurm/cluster.sh}
[ "$(id -u)" -eq 0 ] || { echo "slurm-diff: needs root (slurmctld, slurmd, munged)" >&2; exit 1; }
[ -f "$CLUSTER_SH" ] || { echo "slurm-diff: no $CLUSTER_SH" >&2; exit 1; }
[ -f /usr/include/slurm/pmi2.h ] || { echo "slurm-diff: apt-get install libpmi2-0-dev" >&2; exit 1; }
CLUSTER="bash $CLUSTER_SH"

T=$(mktemp -d /tmp/pmi2-slurm.XXXXXX)
chmod 0755 "$T"
C=$T/cluster
trap '$CLUSTER stop "$C" || true; [ "${RSHM_SLURM_KEEP:-0}" = 1 ] && echo "kept $T" || rm -rf "$T"' EXIT

make -s -C component >/dev/null
cargo build -q --release -p rshm-pmi2 --lib
mkdir -p "$T/bin/comp" "$T/stats"
install -m 0755 "$TARGET/release/gds-component/pmix_mca_gds_rshm.so" "$T/bin/comp/"
install -m 0755 "$TARGET/release/librshm_pmi2.so" "$T/bin/"
SRC=pmi2/tests/c/pmi2_check.c
cc -O2 -Wall -Wextra -Werror -I/usr/include/slurm -o "$T/bin/check-slurm" "$SRC" -lpmi2
cc -O2 -Wall -Wextra -Werror -Ipmi2/include -o "$T/bin/check-rshm" "$SRC" -L"$T/bin" \
  -lrshm_pmi2 -Wl,-rpath,"$T/bin"
cc -O2 -I/usr/include/slurm -o "$T/bin/bench-slurm" pmi2/bench/pmi2_get_bench.c -lpmi2
cc -O2 -Ipmi2/include -o "$T/bin/bench-rshm" pmi2/bench/pmi2_get_bench.c -L"$T/bin" -lrshm_pmi2 \
  -Wl,-rpath,"$T/bin"

$CLUSTER start "$C"
export SLURM_CONF=$C/etc/slurm.conf
$CLUSTER pmix-env "$C" "PMIX_MCA_gds=rshm,hash;PMIX_MCA_mca_base_component_path=$T/bin/comp"
cd "$T"
PMI2_CHECK_NO_HOSTILE=1 timeout 120 srun -n "$NTASKS" --mpi=pmi2 "$T/bin/check-slurm" 2>"$T/slurm.err" |
  grep '^rank ' | sort >"$T/slurm.txt" || true
$CLUSTER idle "$C"
RSHM_PMI2_STATS=$T/stats timeout 120 srun -n "$NTASKS" --mpi=pmix --export=ALL \
  "$T/bin/check-rshm" 2>"$T/rshm.err" | grep '^rank ' | sort >"$T/rshm.txt" || true
$CLUSTER idle "$C"

echo "slurm-diff: $(wc -l <"$T/slurm.txt") lines from Slurm's libpmi2 (srun --mpi=pmi2)," \
  "$(wc -l <"$T/rshm.txt") from librshm_pmi2.so (srun --mpi=pmix, rshm)"
echo "--- Slurm libpmi2 / +++ librshm_pmi2.so:"
{ diff -U0 "$T/slurm.txt" "$T/rshm.txt" || true; } | grep '^[-+]rank' || echo "(no differences)"
echo "librshm_pmi2.so counters: $(cat "$T"/stats/* 2>/dev/null | paste -sd' ')"
# p50 of PMI2_KVS_Get and PMI2_Info_GetJobAttr, median over tasks.
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { awk -v k="$2" '{for (i=1;i<NF;i++) if ($i==k) print $(i+1)}' "$1" | median; }
timeout 120 srun -n "$NTASKS" --mpi=pmi2 "$T/bin/bench-slurm" 4096 >"$T/bench-slurm.txt" 2>&1 || true
$CLUSTER idle "$C"
timeout 120 srun -n "$NTASKS" --mpi=pmix "$T/bin/bench-rshm" 4096 >"$T/bench-rshm.txt" 2>&1 || true
$CLUSTER idle "$C"
printf '%-34s %14s %22s %20s\n' library "KVS_Get p50" "GetJobAttr map p50" "GetJobAttr univ p50"
for b in slurm rshm; do
  printf '%-34s %11s ns %19s ns %17s ns\n' "$([ $b = slurm ] && echo "Slurm libpmi2 (--mpi=pmi2)" ||
    echo "librshm_pmi2.so (--mpi=pmix, rshm)")" "$(field "$T/bench-$b.txt" kvs_get_p50_ns)" \
    "$(field "$T/bench-$b.txt" mapping_p50_ns)" "$(field "$T/bench-$b.txt" universe_p50_ns)"
done
status=0
[ "$(grep -c 'attached true' "$T"/stats/* 2>/dev/null | awk -F: '{s+=$NF} END {print s+0}')" = "$NTASKS" ] ||
  { echo "FAIL: not every task attached the store"; status=1; }
[ -s "$T/slurm.txt" ] && [ -s "$T/rshm.txt" ] || { echo "FAIL: a run printed nothing"; status=1; }
[ "$status" = 0 ] || { sed 's/^/  slurm: /' "$T/slurm.err" | head; sed 's/^/  rshm: /' "$T/rshm.err" | head; }
exit "$status"
