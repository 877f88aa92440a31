#!/usr/bin/env bash
# Get time with and without the preloads under a real launcher: the same one-node job (NP
# ranks, default 4) run plain and with librshm_server_preload.so in mpirun and librshm_client_preload.so
# in the ranks; prints, per key kind, the median over ranks of each rank's p50 per Get, then
# init time and memory. Not a test: numbers for docs/performance.md.
#
# Usage: bench.sh wheel|system   (the stacks of run.sh; run.sh builds what this runs)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
stack=${1:?usage: bench.sh wheel|system}
np=${NP:-4}
here=server-shim/preload/tests/jobs
NP=$np bash "$here/run.sh" "$stack" >/dev/null || { echo "bench.sh: run.sh $stack failed" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/server-preload-jobs/$stack"
case "$stack" in
  wheel) mpirun="$(bash "$here/wheel.sh" "$target")/bin/mpirun" ;;
  system) mpirun=mpirun ;;
esac
args=(--allow-run-as-root --oversubscribe -np "$np" --bind-to none)
"$mpirun" "${args[@]}" "$out/pmix-client" "$here/corpus-bench.txt" >"$out/bench.plain"
LD_PRELOAD="$target/release/librshm_server_preload.so" \
  "$mpirun" "${args[@]}" -x LD_PRELOAD="$target/release/librshm_client_preload.so" \
  "$out/pmix-client" "$here/corpus-bench.txt" >"$out/bench.rshm"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
# field VALUE-NAME FILE KEY-PATTERN: the median over ranks of VALUE-NAME on the bench lines of KEY
field() { grep "^bench .* $3 " "$2" | sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | median; }
stat() { grep '^stats ' "$2" | sed -n "s/.* $1=\([0-9-]*\).*/\1/p" | median; }

printf '%s, %d ranks on one node: Get p50 (ns, median over ranks)\n' "$stack" "$np"
printf '%-34s %12s %12s\n' "key" "libpmix" "preloaded"
while read -r label key; do
  printf '%-34s %12s %12s\n' "$label" "$(field p50_ns "$out/bench.plain" "$key")" "$(field p50_ns "$out/bench.rshm" "$key")"
done <<'KEYS'
job:PMIX_JOB_SIZE PMIX_JOB_SIZE
job:PMIX_LOCAL_PEERS PMIX_LOCAL_PEERS
job(node):PMIX_LOCAL_SIZE PMIX_LOCAL_SIZE
proc:PMIX_LOCAL_RANK PMIX_LOCAL_RANK
proc(random):PMIX_HOSTNAME PMIX_HOSTNAME
card(random,libpmix-both) card
KEYS
for s in init_us first_get_us fence_us rss_anon_kb pss_kb; do
  printf '%-34s %12s %12s\n' "$s" "$(stat "$s" "$out/bench.plain")" "$(stat "$s" "$out/bench.rshm")"
done
