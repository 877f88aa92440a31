#!/usr/bin/env bash
# The Slurm test (README.md): a one-node cluster of its own (cluster.sh), jobs run with
# `srun --mpi=pmix` as a user that is not root, once with PMIX_MCA_gds=hash and once with rshm's
# component (rshm,hash), compared; the store as the tasks map it; nothing rshm-* left behind.
# One PASS/FAIL line per check; exit status 1 on any FAIL. Needs root (the daemons).
#
#   bash tools/slurm/run-check.sh           this machine's Slurm and OpenPMIx (Debian 12: 22.05, 4.2.2)
#   bash tools/slurm/run-check.sh trixie    the same test inside the Debian 13 chroot
#                                           (scripts/chroot.sh: Slurm 24.11, OpenPMIx 5.0.7,
#                                           Open MPI 5.0.7), the 5.0 component
#     RSHM_SLURM_USER=name   the job's user (default rshmjob, created with useradd if missing;
#                            "root" for debugging: the write attempts are then skipped)
#     RSHM_SLURM_TASKS=n     tasks per job (default 4; the node has 8 CPUs)
#     RSHM_SLURM_KEEP=1      keep the test's directory (cluster logs, outputs; with a SUITE
#                            target/slurm-check.XXXXXX, printed as /rshm/target/...)
#     RSHM_SLURM_DIR=dir     where that directory goes (default /tmp, with a SUITE the
#                            checkout's target directory; /tmp in a chroot is a tmpfs, so
#                            the spool and the steps' PMIX_SERVER_TMPDIR are on one there)
#     RSHM_SLURM_PMIX_ENV='A=x;B=y'   more PMIxEnv variables for the rshm jobs (e.g.
#                            PMIX_MCA_gds_rshm_dir=/dev/shm)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
JOB_USER=${RSHM_SLURM_USER:-rshmjob}
NTASKS=${RSHM_SLURM_TASKS:-4}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
CLUSTER="bash $ROOT/tools/slurm/cluster.sh"

[ "$(id -u)" -eq 0 ] || { echo "slurm: run-check.sh needs root (it starts slurmctld, slurmd, munged)" >&2; exit 1; }

# ---- in a chroot of another Debian release: the Rust staticlib built here, the rest inside -----
# The checkout is bound at /rshm, writable: the cluster's directory goes in its target directory
# (below). The component and the programs are compiled inside against that release's OpenPMIx
# and Open MPI; the user exists in the chroot's overlay only, /dev/shm is the chroot's own.
if [ $# -gt 0 ]; then
  suite=$1
  case "$TARGET" in "$ROOT"/*) ;; *)
    echo "slurm: CARGO_TARGET_DIR must be inside the checkout (it is bound into the chroot)" >&2
    exit 2 ;;
  esac
  cargo build --release -q -p rshm-component
  bash scripts/chroot.sh build "$suite"
  rel=${TARGET#"$ROOT"/}
  exec bash scripts/chroot.sh run --bind-rw "$ROOT" "$suite" env RSHM_SLURM_SUITE="$suite" \
    RSHM_SLURM_USER="$JOB_USER" RSHM_SLURM_TASKS="$NTASKS" RSHM_SLURM_KEEP="${RSHM_SLURM_KEEP:-0}" \
    ${RSHM_SLURM_DIR:+RSHM_SLURM_DIR="$RSHM_SLURM_DIR"} \
    ${RSHM_SLURM_PMIX_ENV:+RSHM_SLURM_PMIX_ENV="$RSHM_SLURM_PMIX_ENV"} \
    CARGO_TARGET_DIR="/rshm/$rel" bash /rshm/tools/slurm/run-check.sh
fi
SUITE=${RSHM_SLURM_SUITE:-}

# (no "rshm-" in the name: that marks the store's files in /proc/PID/maps.) In a chroot, under
# the bound checkout's target directory: /tmp there is a tmpfs, and a SlurmdSpoolDir on a tmpfs
# would put the stores in the steps' PMIX_SERVER_TMPDIR (docs/deploy.md, "Where the store
# goes"), where a node's spool on disk does not.
T=$(mktemp -d "${RSHM_SLURM_DIR:-$([ -n "$SUITE" ] && echo "$TARGET" || echo /tmp)}/slurm-check.XXXXXX")
chmod 0755 "$T"
C=$T/cluster
SPOOL=$C/spool
cleanup() {
  $CLUSTER stop "$C" || true
  # tasks the killed stepd left (they run as the job's user, with our SLURM_CONF)
  for pid in $(tasks_of_cluster); do kill -9 "$pid" 2>/dev/null || true; done
  if [ "${RSHM_SLURM_KEEP:-0}" = 1 ]; then echo "slurm: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "FAIL slurm: run-check.sh stopped by a failed command at line $LINENO" >&2' ERR

PASS=0 FAIL=0
pass() { PASS=$((PASS + 1)); echo "PASS $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check() { # description, then a command: PASS when it succeeds
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# The tasks of this cluster's steps: our SLURM_CONF and a PMIx namespace (given by slurmstepd)
# in their environment.
tasks_of_cluster() {
  local p env
  for p in /proc/[0-9]*; do
    env=$( { tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
    grep -qx "SLURM_CONF=$C/etc/slurm.conf" <<<"$env" && grep -q '^PMIX_NAMESPACE=slurm\.pmix\.' <<<"$env" &&
      echo "${p#/proc/}"
  done
  return 0
}

# ---- build: programs and the component, readable by the job's user -------------------------
# The component for the installed OpenPMIx's line (component/Makefile), linked with the staticlib
# (built here, or before entering the chroot: no Rust toolchain inside).
mkdir -p "$T/bin/comp" "$T/out" "$T/stats"
[ -n "$SUITE" ] || cargo build --release -q -p rshm-component
make -s -C component RSHM_A="$TARGET/release/librshm_component.a" OUT="$T/build" >/dev/null
make -s -C tools/slurm OUT="$T/bin" >/dev/null
install -m 0755 "$T/build/pmix_mca_gds_rshm.so" "$T/bin/comp/"
chmod 0755 "$T/bin" "$T/bin/comp" "$T/out"
chmod 1777 "$T/stats" # clients (the job's user) write their RSHM_GDS_STATS files here

if [ "$JOB_USER" != root ] && ! id "$JOB_USER" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin "$JOB_USER"
  echo "slurm: created user $JOB_USER"
fi
if [ -n "$SUITE" ] && [ "$JOB_USER" != root ] && ! runuser -u "$JOB_USER" -- test -x "$T"; then
  echo "FAIL slurm: $JOB_USER cannot reach $T (the checkout's directories must be 0755)"; exit 1
fi
as_user() {
  if [ "$JOB_USER" = root ]; then "$@"; else runuser -u "$JOB_USER" -- "$@"; fi
}

t0=$(date +%s)
$CLUSTER start "$C"
export SLURM_CONF=$C/etc/slurm.conf
echo "slurm: cluster up in $(($(date +%s) - t0)) s ($(srun --version)); jobs as $JOB_USER, $NTASKS tasks"
cd "$T"

HASH_ENV="PMIX_MCA_gds=hash"
RSHM_ENV="PMIX_MCA_gds=rshm,hash;PMIX_MCA_mca_base_component_path=$T/bin/comp;RSHM_GDS_STATS=$T/stats${RSHM_SLURM_PMIX_ENV:+;$RSHM_SLURM_PMIX_ENV}"

# rshm-* entries where a store can be: /dev/shm (top level) and the step's PMIX_SERVER_TMPDIR
# (SlurmdSpoolDir/pmix.J.S).
stores() {
  { find /dev/shm -maxdepth 1 -name 'rshm-*' 2>/dev/null || true
    find "$SPOOL" -name 'rshm-*' -prune 2>/dev/null || true; } | sort
}

# The entries of `stores` not in file $1 (what this cluster's jobs added), after up to 10 s.
# A store named for a live process other than this cluster's slurmstepds (rshm-<pid>-<nonce>)
# is another program's, running on the same machine.
new_stores() {
  local left
  for _ in $(seq 50); do
    left=$(stores | comm -13 "$1" - | not_foreign)
    [ -z "$left" ] && return 0
    sleep 0.2
  done
  echo "$left"
}

not_foreign() {
  local path pid ours=
  while read -r path; do
    pid=$(basename "$path" | sed -n 's/^rshm-\([0-9][0-9]*\)-.*/\1/p')
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      [ -n "$ours" ] || ours=" $($CLUSTER steps "$C" | tr '\n' ' ') "
      [[ "$ours" == *" $pid "* ]] || continue
    fi
    echo "$path"
  done
}

srun_job() { # cfg name srun-args... -> $T/out/<cfg>-<name>.{out,err}, status
  local cfg=$1 name=$2; shift 2
  local gds=hash comp=
  [ "$cfg" = rshm ] && { gds=rshm,hash; comp=$T/bin/comp; }
  as_user env PMIX_MCA_gds=$gds ${comp:+PMIX_MCA_mca_base_component_path=$comp} \
    timeout 60 srun -n "$NTASKS" --mpi=pmix "$@" >"$T/out/$cfg-$name.out" 2>"$T/out/$cfg-$name.err"
}

no_leftovers() { # what before-file
  local left
  left=$(new_stores "$2")
  if [ -z "$left" ]; then
    pass "$1: no rshm-* left in /dev/shm or the spool"
  else
    fail "$1: left behind: $(paste -sd' ' <<<"$left")"
  fi
}

server_stats() { # dir -> the names of the servers' RSHM_GDS_STATS files in it
  find "$1" -maxdepth 1 -name 'server-*' -printf '%f\n' 2>/dev/null || true
}

run_config() { # cfg
  local cfg=$1 before=$T/out/$1-before
  stores >"$before"
  rm -f "$T/stats"/*
  local s=0
  srun_job "$cfg" client "$T/bin/job-client" || s=$?
  # (PMIx_Error_string: "SUCCESS" in OpenPMIx 4.2, "PMIX_SUCCESS" in 5.0)
  check "$cfg: job-client ran (exit $s), $NTASKS ranks finalized" \
    test "$s" = 0 -a "$(grep -cE '^done [0-9]+ (PMIX_)?SUCCESS$' "$T/out/$cfg-client.out")" = "$NTASKS"
  no_leftovers "$cfg: after the job-client job" "$before"
  # the server writes its stats when slurmstepd finalizes it, after srun has returned
  $CLUSTER idle "$C"
  cp -r "$T/stats" "$T/out/$cfg-stats"
  s=0
  srun_job "$cfg" mpi "$T/bin/mpi-job" || s=$?
  check "$cfg: MPI job ran (exit $s), $NTASKS correct results" \
    test "$s" = 0 -a "$(grep -c '^mpi [0-9]* size=' "$T/out/$cfg-mpi.out")" = "$NTASKS"
  no_leftovers "$cfg: after the MPI job" "$before"
}

show() { sed 's/^/    /' "$@" | head -20; }

# ---- hash, then rshm -----------------------------------------------------------------------
$CLUSTER pmix-env "$C" "$HASH_ENV"
run_config hash
$CLUSTER pmix-env "$C" "$RSHM_ENV"
run_config rshm

O=$T/out
for cfg in hash rshm; do
  grep '^get ' "$O/$cfg-client.out" | sort >"$O/$cfg-answers" || true
  sort "$O/$cfg-mpi.out" >"$O/$cfg-mpi" || true
done
n=$(wc -l <"$O/hash-answers")
if [ "$n" -gt 0 ] && diff -u "$O/hash-answers" "$O/rshm-answers" >"$O/answers.diff"; then
  pass "answers: rshm's equal hash's ($n Get answers)"
else
  fail "answers: rshm's differ from hash's ($n Get answers under hash; diff:)"
  grep '^[-+]get' "$O/answers.diff" | show
fi
if [ -s "$O/hash-mpi" ] && cmp -s "$O/hash-mpi" "$O/rshm-mpi"; then
  pass "MPI results: rshm's equal hash's"
else
  fail "MPI results differ"; diff "$O/hash-mpi" "$O/rshm-mpi" | show
fi

# hash: the component out of the way (the PMIxEnv switch works)
check "hash: no rshm- segment mapped, no server stats (the component was not loaded)" \
  test -z "$(grep '^map ' "$O/hash-client.out" | grep -v ' none ' || true)" -a \
  -z "$(server_stats "$O/hash-stats")"

# rshm: the server ran the component; the tasks read the store
srv=$(server_stats "$O/rshm-stats")
check "rshm: the PMIx server in slurmstepd ran the component (RSHM_GDS_STATS $srv)" test -n "$srv"
check "rshm: every task was given a store (RSHM_STORE)" \
  test "$(grep -c '^env [0-9]* RSHM_STORE /' "$O/rshm-client.out")" = "$NTASKS"
ranks_mapping=$({ grep '^map ' "$O/rshm-client.out" | grep -v ' none ' || true; } | awk '{print $2}' | sort -u | wc -l)
if [ "$ranks_mapping" = "$NTASKS" ]; then
  pass "rshm: all $NTASKS tasks map rshm- segments"
else
  fail "rshm: $ranks_mapping of $NTASKS tasks map an rshm- segment (the store was not used)"
  { grep -h '^store ' "$O/rshm-client.out" | cut -d' ' -f3- || true; } | sort | uniq -c | show
fi
answered=$({ cat "$O/rshm-stats"/[0-9]* 2>/dev/null || true; } | awk '$1 == "answered" {s += $2} END {print s + 0}')
check "rshm: the clients answered Gets from the store (answered $answered)" test "$answered" -gt 0
maps=$(grep '^map ' "$O/rshm-client.out" | grep -v ' none ' || true)
if [ -n "$maps" ]; then
  check "rshm: every mapping read-only (r--s / r--p)" \
    test -z "$(echo "$maps" | awk '$3 !~ /^r-/' || true)"
  check "rshm: every mapped store file on a tmpfs" test -z "$(echo "$maps" | grep ' not-tmpfs ' || true)"
  echo "$maps" | awk '{print "    " $3, $4, $5}' | sort | uniq -c | head -8
  if [ "$JOB_USER" = root ]; then
    echo "SKIP rshm: write attempts (the job runs as root)"
  else
    refused=$(grep -c '^try [0-9]* [a-z-]* refused ' "$O/rshm-client.out" || true)
    allowed=$(grep '^try [0-9]* [a-z-]* ALLOWED ' "$O/rshm-client.out" || true)
    if [ "$refused" -gt 0 ] && [ -z "$allowed" ]; then
      pass "rshm: all $refused write attempts on the store refused (open w/rw, truncate, chmod, rename, unlink; create, mkdir in, rename, rmdir the store's directory)"
    else
      fail "rshm: write attempts on the store succeeded ($refused refused)"; echo "$allowed" | show
    fi
  fi
else
  fail "rshm: no mapping to check for permissions, tmpfs and write attempts"
fi

# ---- the store after scancel and after kill -9 of slurmstepd -------------------------------
# A job that holds (job-client --hold) until its store shows up, then is cancelled / its
# slurmstepd killed. Prints the job's step id; $HELD_STORE: the store that appeared.
start_held() { # name
  local before=$T/out/$1-before
  stores >"$before"
  as_user env PMIX_MCA_gds=rshm,hash PMIX_MCA_mca_base_component_path="$T/bin/comp" \
    timeout 60 srun -n "$NTASKS" --mpi=pmix "$T/bin/job-client" --hold 60 \
    >"$T/out/$1.out" 2>"$T/out/$1.err" &
  HELD_SRUN=$!
  HELD_STORE=
  for _ in $(seq 150); do
    if grep -q '^hold 0 ' "$T/out/$1.out" 2>/dev/null; then
      HELD_STORE=$(stores | comm -13 "$before" - | head -1)
      break
    fi
    sleep 0.2
  done
  HELD_STEP=$(awk '$1 == "hold" {sub("slurm.pmix.", "", $3); print $3; exit}' "$T/out/$1.out")
}

wait_srun() {
  for _ in $(seq 100); do kill -0 "$HELD_SRUN" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$HELD_SRUN" 2>/dev/null && kill -9 "$HELD_SRUN" 2>/dev/null
  wait "$HELD_SRUN" 2>/dev/null || true
}

node_resume() { # a node that Slurm drained (a killed slurmstepd) takes jobs again
  local st
  st=$(sinfo -h -o %t)
  case "$st" in
    idle*|mix*|alloc*) ;;
    *) scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true ;;
  esac
}

start_held scancel
if [ -n "$HELD_STEP" ] && [ -n "$HELD_STORE" ]; then
  pass "scancel: a running job's store exists ($HELD_STORE)"
  scancel "${HELD_STEP%%.*}"
  wait_srun
  no_leftovers "scancel: after scancel of the running job" "$T/out/scancel-before"
else
  fail "scancel: no running job with a store (step '${HELD_STEP}', store '${HELD_STORE}')"
  show "$T/out/scancel.err"
  [ -n "$HELD_STEP" ] && scancel "${HELD_STEP%%.*}"
  wait_srun
fi

start_held kill9
if [ -n "$HELD_STEP" ] && [ -n "$HELD_STORE" ]; then
  pass "kill -9: a running job's store exists ($HELD_STORE)"
  stepd=
  for pid in $($CLUSTER steps "$C"); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "[$HELD_STEP]" && stepd=$pid
  done
  if [ -n "$stepd" ]; then
    kill -9 "$stepd"
    for _ in $(seq 50); do kill -0 "$stepd" 2>/dev/null || break; sleep 0.1; done
    scancel "${HELD_STEP%%.*}" 2>/dev/null || true
    for pid in $(tasks_of_cluster); do kill -9 "$pid" 2>/dev/null || true; done
    wait_srun
    check "kill -9: the killed server's store is left ($HELD_STORE)" test -e "$HELD_STORE"
    node_resume
    before=$T/out/next-before
    stores | grep -vxF "$HELD_STORE" >"$before" || true
    s=0
    srun_job rshm next "$T/bin/job-client" || s=$?
    check "kill -9: the next job ran (exit $s)" test "$s" = 0
    no_leftovers "kill -9: after the next job (its server sweeps the dead store)" "$before"
  else
    fail "kill -9: no slurmstepd for step $HELD_STEP"
    scancel "${HELD_STEP%%.*}"; wait_srun
  fi
else
  fail "kill -9: no running job with a store (step '${HELD_STEP}', store '${HELD_STORE}')"
  show "$T/out/kill9.err"
  [ -n "$HELD_STEP" ] && scancel "${HELD_STEP%%.*}"
  wait_srun
fi

echo "slurm: $PASS checks passed, $FAIL failed, in $(($(date +%s) - t0)) s (jobs as $JOB_USER)"
trap - ERR
[ "$FAIL" -eq 0 ]
