#!/bin/bash
# component/tests/jobs.sh's jobs for one OpenPMIx line: build the line's component and the PMIx
# client, run the jobs, compare. Inside the Debian 13 chroot for 5.0 and the Debian unstable one
# for 7.0 (the checkout at /rshm), on this host for 4.2 (SRC=the checkout, LINE=4.2). $TARGET:
# the target directory.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
src=${SRC:-/rshm}
line=${LINE:-5.0}
here=$src/component/tests
out=$TARGET/component-jobs/$line
comp=$TARGET/release/gds-component-$line
[ "$line" != 4.2 ] || comp=$TARGET/release/gds-component
preload=$TARGET/release/librshm_client_preload.so
mkdir -p "$out"
rm -rf "${out:?}"/*
fail=0

echo "libpmix $(pkg-config --modversion pmix), $(mpirun --version 2>/dev/null | head -1)"
make -s -C "$src/component" PMIX_LINE="$line" RSHM_A="$TARGET/release/librshm_component.a" \
  OUT="$comp" >"$out/make.log" 2>&1 || { echo "FAIL: make PMIX_LINE=$line"; cat "$out/make.log"; exit 1; }
host=$src/tools/pmix-host
"$host/gen-attrs.sh" "$(pkg-config --variable=includedir pmix)/pmix_common.h" >"$out/pmix-attrs.h"
client_c=$host/pmix-client.c
if ! grep -q pmix_proc_stats_t "$(pkg-config --variable=includedir pmix)/pmix_common.h"; then
  # OpenPMIx 7.0 dropped PMIX_PROC_STATS: the client's putstats (which no corpus here uses)
  # answers NOT_SUPPORTED in this build
  client_c=$out/pmix-client.c
  sed '/^ *pmix_proc_stats_t st;$/,/^ *free(buf);$/c\        rc = PMIX_ERR_NOT_SUPPORTED;\n        free(buf);' \
    "$host/pmix-client.c" >"$client_c"
fi
cc -std=c11 -O2 -D_GNU_SOURCE -I"$out" -I"$host" $(pkg-config --cflags pmix) -o "$out/pmix-client" \
  "$client_c" "$host/common.c" $(pkg-config --libs pmix) ||
  { echo "FAIL: the PMIx client does not build"; exit 1; }

mpicc -O1 -o "$out/mpi_ring" "$here/c/mpi_ring.c" || { echo "FAIL: mpicc"; exit 1; }
# Shared memory between the ranks of the MPI job: Open MPI 4's vader, 5's sm.
case "$(mpirun --version 2>/dev/null | head -1)" in
  *" 4."*) export OMPI_MCA_btl=self,vader ;;
  *) export OMPI_MCA_btl=self,sm ;;
esac

# job NP MODE CORPUS NAME: one mpirun; output in $out/NAME.MODE (.err), the component's and the
# preload's counters in $out/NAME.MODE.gds/ and .preload/.
job() {
  local np=$1 mode=$2 corpus=$3 name=$4
  local o="$out/$name.$mode" env=() x=() store=""
  mkdir -p "$o.gds" "$o.preload"
  case "$mode" in
    hash) env=(PMIX_MCA_gds=hash) ;;
    default) ;;
    rshm | preload)
      # the store in a tmpfs directory of the job's own ($RSHM_DIR, the server's), which must
      # be empty after the job
      store=/dev/shm/rshm-component-jobs.$$.$name.$mode
      rm -rf "$store"
      mkdir -p "$store"
      env=(PMIX_MCA_gds=rshm,hash PMIX_MCA_mca_base_component_path="$comp" RSHM_GDS_STATS="$o.gds"
        RSHM_DIR="$store")
      [ "$name" != record ] || env+=(RSHM_RECORD_REGISTRATIONS="$out/reg.$np")
      ;;
  esac
  for e in "${env[@]}"; do x+=(-x "${e%%=*}"); done
  [ "$mode" != preload ] || x+=(-x LD_PRELOAD="$preload" -x RSHM_PRELOAD_STATS="$o.preload")
  local rc=0
  # each rank's lines to a file of its own (mpirun forwards the ranks' output in chunks that
  # need not end at a line), under one name for every mode: the command is the app's argv,
  # which the corpus asks
  rm -f "$out"/rank.*
  env "${env[@]}" timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "${x[@]}" \
    bash -c 'c=$1; [ "$PMIX_RANK" != 0 ] || [ ! -e "$1.bench" ] || c=$1.bench
      exec "$0" "$c" >"$2.$PMIX_RANK"' "$out/pmix-client" "$corpus" "$out/rank" \
    >"$o.err" 2>&1 || rc=$?
  cat "$out"/rank.* >"$o" 2>/dev/null
  rm -f "$out"/rank.*
  if [ -n "$store" ]; then
    if [ -n "$(ls -A "$store")" ]; then
      echo "FAIL: $name $mode: left in the store's directory: $(ls -A "$store")"; fail=1
    fi
    rm -rf "$store"
  fi
  # each client mapped the store, read-only (the corpus's "maps" line)
  if [ -n "$store" ] && grep -q '^maps$' "$corpus"; then
    local m
    m=$(grep '^maps ' "$o" | grep -v ' none$' || true)
    if [ "$(awk '{ print $2 }' <<<"$m" | sort -u | grep -c .)" -ne "$np" ] || awk '$3 != "r--s"' <<<"$m" | grep -q .; then
      echo "FAIL: $name $mode: not every client mapped the store read-only:"; grep '^maps ' "$o" | head; fail=1
    fi
  fi
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $name $mode: mpirun exit $rc"; head -20 "$o.err"; fail=1
  fi
}

# The corpus from a registration dump (tools/pmix-host's "registration dump v1"): every key it
# holds, then the cards. Writes the corpus and "ID QUERY" lines ($2.queries).
make_corpus() {
  local reg=$1 corpus=$2 np=$3
  awk -v np="$np" '
    function q(line) { if (!(line in seen)) { seen[line] = 1; n++; printf "k%03d %s\n", n, line } }
    /^#/ || /^(nspace|local|nlocalprocs|ninfo) / { next }
    $1 == 0 {
      ctx = ""
      if ($2 == "pmix.node.arr") ctx = "PMIX_NODE_INFO"
      else if ($2 == "pmix.app.arr") ctx = "PMIX_APP_INFO"
      else if ($2 == "pmix.ssn.arr") ctx = "PMIX_SESSION_INFO"
      else if ($2 == "pmix.pdata") ctx = "proc"
      else q("* " $2)
      next
    }
    $1 == 1 && ctx == "proc" && $2 == "pmix.rank" { rank = $4; next }
    $1 == 1 && ctx == "proc" { q(rank " " $2); next }
    $1 == 1 && ctx != "" { q("* " $2 " " ctx "=true"); q("* " $2) }
  ' "$reg" >"$corpus.queries"
  {
    echo "# generated from $(basename "$reg") by component/tests/jobs-run.sh"
    cat "$corpus.queries"
    echo "put global card card-of-%r"
    echo "put local near near-of-%r"
    echo commit
    echo fence
    for ((r = 0; r < np; r++)); do
      printf 'g%03d %d card\nl%03d %d near\n' "$r" "$r" "$r" "$r"
      printf 'g%03d %d card\nl%03d %d near\n' "$r" "$r" "$r" "$r" >>"$corpus.queries"
    done
    echo maps
  } >"$corpus"
  # rank 0 alone times Gets (4 ranks), once the corpus is through: the other ranks have finished
  # then, or are finishing
  if [ "$np" -eq 4 ]; then
    {
      cat "$corpus"
      echo "bench 4000 * PMIX_JOB_SIZE"
      echo "bench 4000 me PMIX_LOCAL_RANK"
      echo "bench 4000 1 PMIX_HOSTNAME"
      echo "bench 4000 1 card"
      echo "bench 4000 1 near"
    } >"$corpus.bench"
  fi
}

# Answer lines as compared: the launcher's pid and session directories, the session id and the
# node's available memory (PMIX_AVAIL_PHYS_MEMORY) made equal, as they differ between any two
# jobs (a value of theirs is still compared for its status and type); timings, maps and the
# put/commit/fence lines apart.
normalize() {
  local sid
  sid=$(awk '$3 == "pmix.session.id" || $3 == "pmix.pmem" { print $1 }' "$2" | paste -sd' ')
  grep -Ev '^(bench|maps|commit|fence|stats) |^put:' "$1" |
    sed -E 's/prterun-[^ "@]*@/prterun-PID@/g; s#/tmp/prterun\.[^/" ]*#/tmp/prterun.PID#g' |
    sed -E 's/"\[[0-9]+,([0-9]+)\]"/"[JOBFAM,\1]"/g; s#/ompi\.[^/" ]*/pid\.[0-9]+#/ompi.SESSION/pid.PID#g; s#/tmp/ompi\.[0-9]+#/tmp/ompi.PID#g' |
    awk -v sid=" $sid " 'index(sid, " " $1 " ") && $3 ~ /SUCCESS$/ { $5 = "VARIES" } { print }' | sort
}

# Documented differences: "QUERY MODE" lines of jobs-differences-LINE.txt (# comments).
known() {
  local mode=$1 queries=$2
  awk -v m="$mode" 'FNR == NR { if (!/^#/ && NF) { mm = $NF; $NF = ""; sub(/ $/, ""); if (mm == m || mm == "all") k[$0] = 1 }; next }
    { id = $1; $1 = ""; sub(/^ /, ""); if ($0 in k) print id }' "$here/jobs-differences-$line.txt" "$queries"
}

for np in ${NPS:-4 16}; do
  mkdir -p "$out/reg.$np"
  job "$np" rshm "$src/server-shim/preload/tests/jobs/corpus-prrte.txt" record
  reg=$(ls "$out/reg.$np"/*.reg 2>/dev/null | head -1)
  [ -n "$reg" ] || { echo "FAIL: np $np: no registration recorded"; fail=1; continue; }
  corpus=$out/corpus.$np
  make_corpus "$reg" "$corpus" "$np"
  for mode in hash default rshm preload; do
    job "$np" "$mode" "$corpus" "np$np"
  done
  normalize "$out/np$np.hash" "$corpus.queries" >"$out/np$np.hash.n"
  # The reference itself is a job: under load gds/hash was seen answering one local card of a
  # peer NOT-FOUND after the fence where every other store (ds21 among them) had it. When the
  # reference differs from the store rshm serves, it is run once more and that run is the
  # reference; a difference that is rshm's stays.
  normalize "$out/np$np.rshm" "$corpus.queries" >"$out/np$np.rshm.n"
  if ! cmp -s "$out/np$np.hash.n" "$out/np$np.rshm.n"; then
    mv "$out/np$np.hash" "$out/np$np.hash.first"
    job "$np" hash "$corpus" "np$np"
    normalize "$out/np$np.hash" "$corpus.queries" >"$out/np$np.hash.n"
    cmp -s <(normalize "$out/np$np.hash.first" "$corpus.queries") "$out/np$np.hash.n" ||
      echo "np $np hash: the reference job ran twice, its two runs differed ($(diff <(normalize "$out/np$np.hash.first" "$corpus.queries") "$out/np$np.hash.n" | grep -c '^[<>]') lines)"
  fi
  lines=$(wc -l <"$out/np$np.hash.n")
  expect=$(($(grep -c . "$corpus.queries") * np))
  [ "$lines" -eq "$expect" ] || { echo "FAIL: np $np hash: $lines answer lines, expected $expect"; fail=1; }
  for mode in default rshm preload; do
    normalize "$out/np$np.$mode" "$corpus.queries" >"$out/np$np.$mode.n"
    skip=$(known "$mode" "$corpus.queries" | paste -sd'|')
    [ -n "$skip" ] || skip='^$'
    # OpenPMIx's own default store is a reference too, and as flaky as hash under load (a peer's
    # local card NOT-FOUND after the fence): run once more on a difference. rshm's modes never.
    if [ "$mode" = default ] && ! diff -q <(grep -Ev "^($skip) " "$out/np$np.hash.n") \
        <(grep -Ev "^($skip) " "$out/np$np.$mode.n") >/dev/null; then
      echo "np $np default: differed from hash on its first run; run once more"
      job "$np" default "$corpus" "np$np"
      normalize "$out/np$np.$mode" "$corpus.queries" >"$out/np$np.$mode.n"
    fi
    if ! diff <(grep -Ev "^($skip) " "$out/np$np.hash.n") <(grep -Ev "^($skip) " "$out/np$np.$mode.n") \
        >"$out/np$np.$mode.diff"; then
      echo "FAIL: np $np $mode: answers differ from hash (< hash, > $mode):"
      grep '^[<>]' "$out/np$np.$mode.diff" | head -20 | while read -r side id rest; do
        echo "    $side $id $rest    [$(awk -v i="$id" '$1 == i { $1 = ""; print }' "$corpus.queries")]"
      done
      fail=1
    fi
    ndoc=0
    if [ "$skip" != '^$' ]; then
      ndoc=$(diff <(grep -E "^($skip) " "$out/np$np.hash.n") <(grep -E "^($skip) " "$out/np$np.$mode.n") | grep -c '^>' || true)
    fi
    same=$(comm -12 "$out/np$np.hash.n" "$out/np$np.$mode.n" | wc -l)
    echo "np $np $mode: $same of $lines answers equal to hash's ($(grep -c . "$corpus.queries") queries x $np ranks); $ndoc documented differences"
  done
  # every rshm client attached and answered from the store
  for mode in rshm preload; do
    clients=0 answered=0 passed=0
    d="$out/np$np.$mode.gds"; [ "$mode" = rshm ] || d="$out/np$np.$mode.preload"
    for f in "$d"/[0-9]*; do
      [ -e "$f" ] || continue
      clients=$((clients + 1))
      a=$(awk '$1 == "answered" { print $2 }' "$f"); answered=$((answered + a))
      passed=$((passed + $(awk '$1 == "passed" { print $2 }' "$f")))
      [ "$a" -gt 0 ] || { echo "FAIL: np $np $mode: client ${f##*/} answered nothing from the store"; fail=1; }
    done
    [ "$clients" -eq "$np" ] || { echo "FAIL: np $np $mode: $clients of $np clients counted"; fail=1; }
    echo "np $np $mode: $clients clients, Gets from the store $answered, passed to libpmix $passed"
  done
  # cards only: under rshm + preload every rank's cards come from the store
  {
    echo "put global card card-of-%r"; echo "put local near near-of-%r"; echo commit; echo fence
    for ((r = 0; r < np; r++)); do printf 'g%03d %d card\nl%03d %d near\n' "$r" "$r" "$r" "$r"; done
  } >"$out/cards.$np"
  job "$np" preload "$out/cards.$np" "cards$np"
  # the same without the card Gets: what libpmix itself Gets through PMIx_Get (PMIx_Init's own)
  head -4 "$out/cards.$np" >"$out/nocards.$np"
  job "$np" preload "$out/nocards.$np" "nocards$np"
  base=$(cat "$out/nocards$np.preload.preload"/[0-9]* 2>/dev/null | awk '$1 == "answered" { print $2 }' | sort -u)
  # 7.0's PMIx_Init asks nothing through PMIx_Get: the preload, never called, writes no counters
  [ -n "$(ls -A "$out/nocards$np.preload.preload")" ] || base=0
  bad=0
  [ "$(wc -l <<<"$base")" -eq 1 ] && [ -n "$base" ] || { echo "FAIL: np $np: the job without card Gets counts '$base'"; bad=1; base=0; }
  for f in "$out/cards$np.preload.preload"/[0-9]*; do
    a=$(awk '$1 == "answered" { print $2 }' "$f"); p=$(awk '$1 == "passed" { print $2 }' "$f")
    [ "$a" -eq $((2 * np + base)) ] && [ "$p" -eq 0 ] || { echo "FAIL: np $np cards: client ${f##*/} answered $a, passed $p (want $((2 * np)) + $base, 0)"; bad=1; }
  done
  n=$(grep -c 'SUCCESS PMIX_STRING "\(card\|near\)-of-' "$out/cards$np.preload" || true)
  [ "$n" -eq $((2 * np * np)) ] || { echo "FAIL: np $np cards: $n of $((2 * np * np)) card answers"; bad=1; }
  [ "$bad" -eq 0 ] && echo "np $np cards: every rank's global and local card of every rank from the store under rshm + preload ($n answers, 0 passed to libpmix)" || fail=1
  # 7.0: the component alone answers PMIx_Get in the caller's thread (is_tsafe), so every card
  # comes from the store without the preload too
  if [ "$line" = 7.0 ]; then
    job "$np" rshm "$out/cards.$np" "cards$np"
    bad=0
    for f in "$out/cards$np.rshm.gds"/[0-9]*; do
      a=$(awk '$1 == "answered" { print $2 }' "$f")
      [ "$a" -ge $((2 * np)) ] || { echo "FAIL: np $np cards rshm: client ${f##*/} answered $a from the store (want >= $((2 * np)))"; bad=1; }
    done
    n=$(grep -c 'SUCCESS PMIX_STRING "\(card\|near\)-of-' "$out/cards$np.rshm" || true)
    [ "$n" -eq $((2 * np * np)) ] || { echo "FAIL: np $np cards rshm: $n of $((2 * np * np)) card answers"; bad=1; }
    [ "$bad" -eq 0 ] && echo "np $np cards: every rank's cards from the store under the component alone ($n answers)" || fail=1
  fi
done

# An MPI program (Open MPI's own start-up over PMIx: its modex, cards and job data), 4 ranks,
# under the component and component + preload: every rank's checks ok, the store mapped
# read-only.
for mode in rshm preload; do
  o="$out/mpi.$mode"
  store=/dev/shm/rshm-component-jobs.$$.mpi.$mode
  mkdir -p "$store"
  x=(-x PMIX_MCA_gds -x PMIX_MCA_mca_base_component_path)
  [ "$mode" != preload ] || x+=(-x LD_PRELOAD="$preload")
  rc=0
  env PMIX_MCA_gds=rshm,hash PMIX_MCA_mca_base_component_path="$comp" RSHM_DIR="$store" \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "${x[@]}" "$out/mpi_ring" \
    >"$o" 2>"$o.err" || rc=$?
  ok=$(grep -c '^\(allreduce\|ring\|split\) [0-3] ok ' "$o" || true)
  ro=$(awk '$1 == "maps" && $3 == "r--s" { print $2 }' "$o" | sort -u | wc -l)
  bad=$(awk '$1 == "maps" && $3 != "r--s" && $3 != "none"' "$o" | wc -l)
  if [ "$rc" -ne 0 ] || [ "$ok" -ne 12 ] || [ "$ro" -ne 4 ] || [ "$bad" -ne 0 ] || [ -n "$(ls -A "$store")" ]; then
    echo "FAIL: mpi $mode: exit $rc, $ok of 12 checks ok, $ro of 4 ranks mapped the store read-only, $bad other mappings, left: $(ls -A "$store")"
    head -20 "$o" "$o.err"; fail=1
  else
    echo "mpi $mode: 4 ranks, Allreduce, ring and Comm_split ok, each mapped the store read-only"
  fi
  rm -rf "$store"
done

# Get p50 (ns), 4 ranks: rank 0's (the peer is rank 1; its global card was put PMIX_GLOBAL, its
# local card PMIX_LOCAL)
if [ -e "$out/np4.hash" ]; then
  printf '%-10s %12s %12s %14s %12s %12s\n' "Get p50 ns" "job key" "own proc key" "peer hostname" \
    "global card" "local card" | tee "$out/p50.txt"
  for mode in hash default rshm preload; do
    row=()
    for k in PMIX_JOB_SIZE PMIX_LOCAL_RANK PMIX_HOSTNAME card near; do
      row+=("$(awk -v k="$k" '$1 == "bench" && $2 == 0 && $3 == k { sub("p50_ns=", "", $5); print $5 }' "$out/np4.$mode")")
    done
    printf '%-10s %12s %12s %14s %12s %12s\n' "$mode" "${row[@]}" | tee -a "$out/p50.txt"
  done
  echo "(rank 0 of 4 timing, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/p50.txt"
fi
[ "$fail" -eq 0 ] && echo "OpenPMIx $line jobs: ok" || { echo "OpenPMIx $line jobs: FAILED"; exit 1; }
