#!/usr/bin/env bash
# The server preload under OpenPMIx 7.0 (Debian unstable's PRRTE 5, which registers
# PMIX_NODE_MAP / PMIX_PROC_MAP as PMIX_REGEX2): the same 4-rank job plain and with
# librshm_server_preload.so in mpirun and librshm_client_preload.so in the ranks. The preloaded run must
# register the namespace in the store (the preload's verbose line), answer every job-level Get
# of the ranks from it (RSHM_PRELOAD_STATS), and give the same answers as the plain run.
# Root only (a Debian chroot, scripts/chroot.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ "$(id -u)" -ne 0 ]; then
  echo "regex2: skipped (needs root for the chroot)"
  exit 0
fi
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
cargo build --release -q -p rshm-client-preload -p rshm-server-preload
bash scripts/chroot.sh build sid

stage=$(mktemp -d /tmp/rshm-regex2.XXXXXX)
trap 'rm -rf "$stage"' EXIT
cp server-shim/preload/tests/c/job_probe.c "$target/release/librshm_server_preload.so" \
  "$target/release/librshm_client_preload.so" "$stage/"
cat >"$stage/inside.sh" <<'INSIDE'
#!/bin/bash
set -euo pipefail
cd /tmp
gcc -O2 -o job_probe /rshm/job_probe.c $(pkg-config --cflags --libs pmix)
echo "libpmix: $(pmix_info --pretty-print 2>/dev/null | sed -n 's/^ *PMIX: //Ip' | head -1)"
run() { mpirun --allow-run-as-root --oversubscribe -n 4 "$@" ./job_probe; }
run >plain.out
mkdir stats
env RSHM_PRELOAD_VERBOSE=1 LD_PRELOAD=/rshm/librshm_server_preload.so \
  mpirun --allow-run-as-root --oversubscribe -n 4 -x LD_PRELOAD=/rshm/librshm_client_preload.so \
  -x RSHM_PRELOAD_STATS=/tmp/stats ./job_probe >pre.out 2>pre.err
fail=0
grep -q 'registered ' pre.err || { echo "FAIL: the server preload registered no namespace"; cat pre.err; fail=1; }
if grep -q 'left to libpmix' pre.err; then echo "FAIL: a namespace was left to libpmix"; cat pre.err; fail=1; fi
if ! diff <(grep -v '^p50' plain.out | sort) <(grep -v '^p50' pre.out | sort); then
  echo "FAIL: answers differ (plain < > preloaded)"; fail=1
fi
n=0
for f in stats/*; do
  a=$(awk '$1 == "answered" { print $2 }' "$f")
  [ "${a:-0}" -ge 8 ] || { echo "FAIL: client ${f##*/} answered ${a:-0} < 8 job-level Gets from the store"; fail=1; }
  n=$((n + 1))
done
[ "$n" -eq 4 ] || { echo "FAIL: $n of 4 clients wrote statistics"; fail=1; }
echo "Get p50, rank 0 (4 ranks and mpirun on 2 cores): plain $(grep '^p50' plain.out | tr '\n' ' ')| preloaded $(grep '^p50' pre.out | tr '\n' ' ')"
exit $fail
INSIDE
bash scripts/chroot.sh run --bind "$stage" sid bash /rshm/inside.sh
echo "regex2: the server preload serves OpenPMIx 7.0's PMIX_REGEX2 maps"
