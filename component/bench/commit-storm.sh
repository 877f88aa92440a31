#!/usr/bin/env bash
# The commit storm with real clients: tools/pmix-host (libpmix 4.2.2 server) starts N local
# clients (component/bench/commit_storm.c), each PMIx_Init, K PMIx_Put of a BYTES byte object
# (PMIX_GLOBAL), one PMIx_Commit, a PMIx_Fence (FENCE: fence = no data collection, collect,
# nofence), PMIx_Get of every key of PEERS other ranks (each value checked; only in the ranks
# below READERS when it is not 0), PMIx_Finalize. Run side by side (interleaved per N, K) under OpenPMIx gds/hash and
# under rshm's gds component (PMIX_MCA_gds=rshm,hash), measuring the server's own CPU time
# (utime + stime of the pmix-host process, its clients excluded: host_cpu.c) and the wall time.
#
#   bash component/bench/commit-storm.sh [NS] [KS] [BYTES] [FENCE] [PEERS] [READERS]
#        defaults: "16 64 128 256 512 1024" "1 16 64" 200 fence 0 0
#
# K = 0 is allowed (no Put, an empty commit): the server's cost of the same job without posted
# data, to subtract. With rshm the component's counters are read from RSHM_GDS_STATS
# (<dir>/server-<pid>: publications, bytes_written, files_written, and the progress thread's CPU
# time storing posted data, rshm_store_cpu_ns in the store, hash_store_cpu_ns in the gds/hash
# calls the component passes on; each interval less one clock reading's own cost, the least of 32
# empty ones, so that the per-key probes are not counted), "n/a" when it writes none;
# "peak store" is the largest allocated size of the store directory's files, sampled every
# 20 ms. PERF=1 also records the host with perf (cpu-clock) and prints the share of its samples
# in pmix_mca_gds_rshm.so (rshm's store path in user space; the kernel's copying of the files it
# writes is not in it). All N clients share this machine's cores with the host (printed).
# Exit status 1 when a run failed (the host or a client), a client did not report, or the rshm
# column's server wrote no RSHM_GDS_STATS file (the component did not run).
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=${1:-"16 64 128 256 512 1024"}; KS=${2:-"1 16 64"}; BYTES=${3:-200}; FENCE=${4:-fence}
PEERS=${5:-0}; READERS=${6:-0}
PERF=${PERF:-0}
COLUMNS=(hash rshm)
FAILED=0
make -s -C component >/dev/null
make -s -C tools/pmix-host
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
COMP="$TARGET/release/gds-component"
OUT=$(mktemp -d); SHM=$(mktemp -d /dev/shm/commit-storm.XXXXXX)
trap 'rm -rf "$OUT" "$SHM"' EXIT
cc -std=gnu11 -O2 -Wall -Wextra -Werror $(pkg-config --cflags pmix) -o "$OUT/commit_storm" \
  component/bench/commit_storm.c $(pkg-config --libs pmix)
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$OUT/host_cpu" component/bench/host_cpu.c

run() { # column N K -> $OUT/<column>-<N>-<K>.{clients,cpu,err}, stats/, perf
  local col=$1 n=$2 k=$3 gds=hash tag="$OUT/$1-$2-$3"
  [ "$col" = rshm ] && gds="rshm,hash"
  printf 'nspace storm\nnode node001 0-%d\n' $((n - 1)) >"$OUT/job-$n.txt"
  mkdir -p "$tag.stats" "$SHM/$col"
  local perf=()
  [ "$PERF" = 1 ] && perf=(perf record -q -e cpu-clock -F 499 -o "$tag.perf" --)
  RSHM_DIR="$SHM/$col" PMIX_MCA_mca_base_component_path=$COMP PMIX_MCA_gds=$gds \
    RSHM_GDS_STATS="$tag.stats" \
    "${perf[@]}" "$OUT/host_cpu" -w "$SHM/$col" -o "$tag.cpu" -- \
    tools/pmix-host/pmix-host --job "$OUT/job-$n.txt" --timeout $((120 + n)) \
    --client-cmd "$OUT/commit_storm $k $BYTES $FENCE global $PEERS $READERS" >"$tag.clients" 2>"$tag.err" || {
    FAILED=1
    echo "commit-storm: $col N=$n K=$k failed: $(grep -v '^pmix-host: \(register\|direct\)' "$tag.err" | head -3)" >&2
  }
  rm -rf "${SHM:?}/$col"
}

echo "commit-storm: N in {$NS}, K in {$KS}, $BYTES B byte objects, PMIX_GLOBAL, $FENCE," \
  "each client (or the first $READERS when not 0) reading every key of $PEERS peers;" \
  "host + N clients on $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $KS; do
  for n in $NS; do
    for c in "${COLUMNS[@]}"; do
      printf '\r  K=%s N=%s %-6s' "$k" "$n" "$c" >&2
      run "$c" "$n" "$k"
    done
  done
done
printf '\r%40s\r' '' >&2

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else printf "%.0f\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# the median of a client-side field over the clients that report it (-1: not measured)
field() { awk -v k="$2" '$1 == "storm" {for (i=2;i<NF;i++) if ($i==k && $(i+1) >= 0) print $(i+1)}' "$1" | median; }
val() { awk -v k="$2" '{for (i=1;i<NF;i++) if ($i==k) {print $(i+1); exit}}' "$1" 2>/dev/null; }
mib() { awk -v b="$1" 'BEGIN {if (b == "" || b == "n/a") print "n/a"; else printf "%.2f MiB", b / 1048576}'; }
printf '%5s %3s %-5s %5s %10s %8s %11s %11s %10s %10s %8s %10s %10s %9s %10s %12s %11s %12s %6s %11s' N K gds ok \
  "server ms" "(sys)" "µs/commit" "clients ms" "rshm st ms" "hash st ms" "wall s" "commit µs" "fence ms" "get ms" "get cpu ms" \
  "generations" written committed "w/c" "peak store"
[ "$PERF" = 1 ] && printf ' %9s' "in rshm"
printf '\n'
for k in $KS; do
  for n in $NS; do
    for c in "${COLUMNS[@]}"; do
      tag="$OUT/$c-$n-$k"
      user=$(val "$tag.cpu" user_ms); sys=$(val "$tag.cpu" sys_ms)
      cpu=$((${user:-0} + ${sys:-0}))
      ok=$(grep -c '^storm ' "$tag.clients" || true)
      srv=$(ls "$tag.stats"/server-* 2>/dev/null | head -1 || true)
      if [ "$ok" != "$n" ] || { [ "$c" = rshm ] && [ -z "$srv" ]; }; then
        # a client that did not report, or a server that never ran the component
        why="$ok of $n clients reported"
        [ "$c" = rshm ] && [ -z "$srv" ] && why="$why; no RSHM_GDS_STATS server file (the component did not run)"
        echo "commit-storm: $c N=$n K=$k: $why" >&2
        FAILED=1
      fi
      gens=n/a; written=n/a; rst=n/a; hst=n/a
      if [ -n "$srv" ]; then
        gens=$(val "$srv" publications); written=$(val "$srv" bytes_written)
        rst=$(awk -v t="$(val "$srv" rshm_store_cpu_ns)" 'BEGIN {if (t == "") print "n/a"; else printf "%.1f", t / 1e6}')
        hst=$(awk -v t="$(val "$srv" hash_store_cpu_ns)" 'BEGIN {if (t == "") print "n/a"; else printf "%.1f", t / 1e6}')
      fi
      # key "storm.key.<i>" + value, per client
      committed=$(awk -v n="$n" -v k="$k" -v b="$BYTES" \
        'BEGIN {s=0; for (i=0;i<k;i++) s += length("storm.key." i) + b; print s * n}')
      ratio=$(awk -v w="$written" -v c="$committed" \
        'BEGIN {if (w == "n/a" || c == 0) print "n/a"; else printf "%.1f", w / c}')
      peak=$(val "$tag.cpu" peak_dir_bytes)
      [ "$c" = hash ] && peak=n/a
      fence=$(field "$tag.clients" fence_us); get=$(field "$tag.clients" get_us)
      getcpu=$(field "$tag.clients" get_cpu_us)
      printf '%5s %3s %-5s %5s %10s %8s %11s %11s %10s %10s %8s %10s %10s %9s %10s %12s %11s %12s %6s %11s' \
        "$n" "$k" "$c" "$ok" "$cpu" "($sys)" \
        "$(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.0f", c * 1000 / n}')" \
        "$(val "$tag.cpu" children_ms)" "$rst" "$hst" \
        "$(awk -v w="$(val "$tag.cpu" wall_ms)" 'BEGIN {printf "%.1f", w / 1000}')" \
        "$(field "$tag.clients" commit_us)" \
        "$(awk -v f="$fence" 'BEGIN {if (f == "-" || f < 0) print "-"; else printf "%.1f", f / 1000}')" \
        "$(awk -v g="$get" 'BEGIN {if (g == "-" || g < 0) print "-"; else printf "%.1f", g / 1000}')" \
        "$(awk -v g="$getcpu" 'BEGIN {if (g == "-" || g < 0) print "-"; else printf "%.1f", g / 1000}')" \
        "$gens" "$(mib "$written")" "$(mib "$committed")" "$ratio" "$(mib "$peak")"
      if [ "$PERF" = 1 ]; then
        share=$(perf report -q -i "$tag.perf" --comm pmix-host --percentage relative --sort dso --stdio 2>/dev/null |
          awk '/pmix_mca_gds_rshm/ {print $1}')
        printf ' %9s' "${share:-0%}"
      fi
      printf '\n'
    done
  done
done
echo "server ms: utime + stime of pmix-host alone (all its threads: registration, forks, the \
clients' connections, commits, fence, finalize), (sys) its stime; µs/commit: server ms / N; clients ms: utime + stime of all N clients; \
rshm st ms, hash st ms: the progress thread's CPU time in the component's store path and in \
gds/hash's store calls it passes on (rshm column only); commit µs, fence ms, get ms: client-side medians (get ms over the clients that read), get cpu ms: the same clients' median CPU time meanwhile (their libpmix progress thread's included); generations, written: the component's counters \
(rshm only); committed: key + value bytes of all Puts; w/c: written / committed."
exit $FAILED
