#!/usr/bin/env bash
# rshm's drop-in libpmi2.so.0 (pmi2/Makefile) against Slurm's own libpmi2: one binary,
# pmi2/tests/c/pmi2_check.c built against Slurm's `slurm/pmi2.h` and linked with Slurm's -lpmi2
# (Debian's libpmi2-0-dev), run unchanged twice on a one-node cluster of its own
# (tools/slurm/cluster.sh): on Slurm's libpmi2 under `srun --mpi=pmi2`, and on rshm's
# libpmi2.so.0 by LD_LIBRARY_PATH alone under `srun --mpi=pmix` with rshm's gds component. Fails
# if the answers differ where docs/pmi2.md ("Differences from Slurm's libpmi2") lists no
# difference, if the second run did not load rshm's library, or if a task did not read the
# store. Needs root (the daemons).
#
#   bash pmi2/tests/slurm-dropin.sh [TASKS]        (default 4)
#     RSHM_SLURM_CLUSTER=path/cluster.sh   another cluster script (default tools/slurm/cluster.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
NTASKS=${1:-4}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CLUSTER_SH=${RSHM_SLURM_CLUSTER:-$ROOT/tools/slurm/cluster.sh}
[ "$(id -u)" -eq 0 ] || { echo "slurm-dropin: needs root (slurmctld, slurmd, munged)" >&2; exit 1; }
[ -f "$CLUSTER_SH" ] || { echo "slurm-dropin: no $CLUSTER_SH" >&2; exit 1; }
[ -f /usr/include/slurm/pmi2.h ] || { echo "slurm-dropin: apt-get install libpmi2-0-dev" >&2; exit 1; }
CLUSTER="bash $CLUSTER_SH"

T=$(mktemp -d /tmp/pmi2-dropin.XXXXXX)
chmod 0755 "$T"
C=$T/cluster
trap '$CLUSTER stop "$C" || true; [ "${RSHM_SLURM_KEEP:-0}" = 1 ] && echo "kept $T" || rm -rf "$T"' EXIT

make -s -C component >/dev/null
make -s -C pmi2 >/dev/null
mkdir -p "$T/bin/comp" "$T/dropin" "$T/stats"
install -m 0755 "$TARGET/release/gds-component/pmix_mca_gds_rshm.so" "$T/bin/comp/"
cp -a "$TARGET/release/pmi2-slurm/." "$T/dropin/"
cc -O2 -Wall -Wextra -Werror -I/usr/include/slurm -o "$T/bin/check" pmi2/tests/c/pmi2_check.c \
  -lpmi2
# The same binary finds rshm's library by its path alone.
LDD=$(LD_LIBRARY_PATH=$T/dropin ldd "$T/bin/check")
grep -q "libpmi2.so.0 => $T/dropin/libpmi2.so.0" <<<"$LDD" ||
  { echo "FAIL: LD_LIBRARY_PATH does not select rshm's libpmi2.so.0"; exit 1; }
# Every function Slurm's libpmi2.so.0 defines, rshm's directory defines.
SLURM_LIB=$(ldd "$T/bin/check" | awk '$1 == "libpmi2.so.0" {print $3}')
DEFINED=$(nm -D --defined-only "$T/dropin/libpmi2.so.0" "$T/dropin/librshm_pmi2.so")
for sym in $(objdump -T "$SLURM_LIB" | awk '$4 == ".text" {print $NF}'); do
  grep -qw "T $sym" <<<"$DEFINED" || { echo "FAIL: rshm's libpmi2.so.0 lacks $sym"; exit 1; }
done

$CLUSTER start "$C"
export SLURM_CONF=$C/etc/slurm.conf
$CLUSTER pmix-env "$C" "PMIX_MCA_gds=rshm,hash;PMIX_MCA_mca_base_component_path=$T/bin/comp"
cd "$T"
# PMI2_CHECK_NO_HOSTILE: both runs leave out what breaks Slurm's libpmi2 (pmi2_check.c).
export PMI2_CHECK_NO_HOSTILE=1
timeout 120 srun -n "$NTASKS" --mpi=pmi2 "$T/bin/check" 2>"$T/slurm.err" | grep '^rank ' |
  sort >"$T/slurm.txt" || true
$CLUSTER idle "$C"
LD_LIBRARY_PATH=$T/dropin RSHM_PMI2_STATS=$T/stats timeout 120 srun -n "$NTASKS" --mpi=pmix \
  --export=ALL "$T/bin/check" 2>"$T/dropin.err" | grep '^rank ' | sort >"$T/dropin.txt" || true
$CLUSTER idle "$C"

echo "slurm-dropin: $(wc -l <"$T/slurm.txt") lines from Slurm's libpmi2 (srun --mpi=pmi2)," \
  "$(wc -l <"$T/dropin.txt") from rshm's libpmi2.so.0 (srun --mpi=pmix, rshm), one binary"
# The differences docs/pmi2.md lists, by the check's line names (`putnode`: under Slurm's
# libpmi2 no task knows the node's ranks, so every task is the check's node-attribute putter).
DOCUMENTED='^[-+]rank [0-9X]+ (init|probe|probe-get|put-limits|putnode|putnode-limits|jobid|getnode small-buffer|job small-buffer|lookup small-buffer|get-missing|get-missing-src|get-badsrc|node localRanksCount|node localRanks|jobints localRanks|job (hasNameServ|physTopology|physTopologyLevels|cartDims|isHeterogeneous|noSuchAttr)|finalize|publish|lookup|lookup-after-unpublish|unpublish|put-reserved|get-reserved) '
{ diff -U0 "$T/slurm.txt" "$T/dropin.txt" || true; } | grep '^[-+]rank' >"$T/diff.txt" || true
echo "--- Slurm libpmi2 / +++ rshm libpmi2.so.0, as docs/pmi2.md lists:"
grep -E "$DOCUMENTED" "$T/diff.txt" || echo "(none)"
status=0
if grep -v -E "$DOCUMENTED" "$T/diff.txt" >"$T/undocumented.txt"; then
  echo "FAIL: differences docs/pmi2.md does not list:"
  cat "$T/undocumented.txt"
  status=1
fi
echo "rshm counters: $(cat "$T"/stats/* 2>/dev/null | paste -sd' ')"
[ "$(grep -c 'attached true' "$T"/stats/* 2>/dev/null | awk -F: '{s+=$NF} END {print s+0}')" = "$NTASKS" ] ||
  { echo "FAIL: not every task ran on rshm's library and attached the store"; status=1; }
[ "$(grep -c ' init rc 0 ' "$T/slurm.txt")" = "$NTASKS" ] &&
  [ "$(grep -c ' init rc 0 ' "$T/dropin.txt")" = "$NTASKS" ] ||
  { echo "FAIL: a run did not initialize every task"; status=1; }
[ "$status" = 0 ] || { sed 's/^/  slurm: /' "$T/slurm.err" | head; sed 's/^/  dropin: /' "$T/dropin.err" | head; }
exit "$status"
