#!/usr/bin/env bash
# A one-node Slurm cluster of its own (munged, slurmctld, slurmd) in one directory, as root,
# without systemd: its own munge key and socket, its own ports, state, spool, pid and log files.
# A system instance (Debian's packages install and may start one) is neither used nor touched.
#
#   bash tools/slurm/cluster.sh start DIR [PMIX_ENV]   write DIR/etc/slurm.conf, start, wait for
#                                                      the node; PMIX_ENV: mpi.conf's PMIxEnv
#   bash tools/slurm/cluster.sh pmix-env DIR PMIX_ENV  set PMIxEnv and wait until a step has it
#   bash tools/slurm/cluster.sh steps DIR              the pids of the cluster's slurmstepds
#   bash tools/slurm/cluster.sh idle DIR               wait until none runs (srun returns before
#                                                      its slurmstepd has finalized the server)
#   bash tools/slurm/cluster.sh stop DIR               stop every daemon and step it started
#
# PMIxEnv ("A=x;B=y" in mpi.conf beside slurm.conf) is the environment of the PMIx server that
# slurmstepd runs (besides slurmd's own), and is added to the tasks' environment, over the user's.
# slurmd reads mpi.conf at its start and at `scontrol reconfigure`, not per step: pmix-env
# reconfigures, then runs a probe step until the step sees the new generation
# (RSHM_SLURM_PMIX_GEN, appended to PMIxEnv).
#
# Then: SLURM_CONF=DIR/etc/slurm.conf srun ... DIR must be reachable by the job's user (the
# caller makes its parents 0755); the daemons run as root, munged as munge.
set -euo pipefail

die() { echo "cluster: $*" >&2; exit 1; }

# A TCP port nobody listens on (from /proc/net/tcp{,6}), drawn from 20000-39999.
free_port() {
  local p hex
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    hex=$(printf ':%04X ' "$p")
    if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -q "${hex% }$"; then
      echo "$p"; return 0
    fi
  done
  die "no free port found"
}

# The pid in a pid file, if that process still runs.
live_pid() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Wait up to $2 seconds for command "$3..." to succeed.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "timed out waiting for $what"
}

write_conf() {
  local d=$1 host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  [ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))
  cat >"$d/etc/slurm.conf" <<EOF
# One-node test cluster (tools/slurm/cluster.sh); everything under $d.
ClusterName=rshmtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket.2
StateSaveLocation=$d/state
# the steps' PMIx client directories (spmix_appdir_<uid>_<J>.<S>; a killed step leaves its own)
TmpFS=$d/tmp
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=2
InactiveLimit=0
MinJobAge=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  # Slurm >= 23.11's slurmd initializes a cgroup plugin whatever the proctrack and task plugins
  # are, and fails without a mounted /sys/fs/cgroup (a chroot): turn it off. 22.05 has no
  # "disabled" plugin (and does not need one).
  if [ "$(slurm_version)" -ge 2311 ]; then
    echo "CgroupPlugin=disabled" >"$d/etc/cgroup.conf"
  fi
}

slurm_version() { # slurmd's version as YYMM (22.05.8 -> 2205)
  slurmd -V | sed -n 's/^slurm[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1\2/p'
}

# The slurmstepd processes of this cluster: those with a file open under DIR (a step's socket
# is in SlurmdSpoolDir) or DIR as their working directory (slurmd's, which they inherit).
# slurmstepd daemonizes (parent 1) and clears its environment: neither tells.
cluster_steps() {
  local d=$1 p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    case "$(readlink "$p/cwd" 2>/dev/null)" in
      "$d" | "$d"/*) echo "${p#/proc/}"; continue ;;
    esac
    find "$p/fd" -maxdepth 1 -lname "$d/*" 2>/dev/null | grep -q . && echo "${p#/proc/}"
  done
  return 0
}

start_slurmd() {
  local d=$1
  (cd "$d/run" && exec slurmd -D -f "$d/etc/slurm.conf" >>"$d/log/slurmd.out" 2>&1) &
  echo $! >"$d/run/slurmd.bg"
  wait_for "slurmd to register" 30 node_ready "$d"
}

node_ready() {
  SLURM_CONF="$1/etc/slurm.conf" sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'
}

set_pmix_env() { # DIR PMIX_ENV -> the generation written
  local gen
  gen=$(($(cat "$1/etc/pmix-gen" 2>/dev/null || echo 0) + 1))
  echo "$gen" >"$1/etc/pmix-gen"
  printf 'PMIxEnv=%sRSHM_SLURM_PMIX_GEN=%s\n' "${2:+$2;}" "$gen" >"$1/etc/mpi.conf"
  echo "$gen"
}

step_gen() { # DIR -> the generation a new pmix step sees
  (cd "$1" && SLURM_CONF="$1/etc/slurm.conf" timeout 30 srun -n 1 --mpi=pmix printenv RSHM_SLURM_PMIX_GEN)
}

stop_pidfile() { # pidfile name
  local pid
  pid=$(live_pid "$1") || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "cluster: $2 ($pid) did not stop; SIGKILL" >&2
  kill -9 "$pid" 2>/dev/null || true
}

cmd_start() {
  local d=$1 pmix_env=${2:-}
  [ "$(id -u)" -eq 0 ] || die "start needs root"
  d=$(realpath "$d")
  for c in munged slurmctld slurmd srun sinfo; do
    command -v "$c" >/dev/null || die "$c not found (apt-get install slurmctld slurmd slurm-client munge)"
  done
  mkdir -p "$d"/{etc,state,spool,run,log,munge,tmp}
  chmod 0755 "$d" "$d/etc" "$d/munge"
  chmod 1777 "$d/tmp"
  # munged wants its key owned by munge, 0400, and its socket directory not writable by others.
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$d/munge" "$d/munge/munge.key"
  chmod 0400 "$d/munge/munge.key"
  runuser -u munge -- munged --socket="$d/munge/munge.socket.2" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
    --seed-file="$d/munge/munged.seed" >>"$d/log/munged.out" 2>&1 ||
    die "munged failed: $(tail -3 "$d/munge/munged.log" "$d/log/munged.out" 2>/dev/null)"
  wait_for "munged" 10 test -S "$d/munge/munge.socket.2"
  write_conf "$d"
  set_pmix_env "$d" "$pmix_env" >/dev/null
  (cd "$d/run" && exec slurmctld -D -f "$d/etc/slurm.conf" >>"$d/log/slurmctld.out" 2>&1) &
  echo $! >"$d/run/slurmctld.bg"
  wait_for "slurmctld" 30 env SLURM_CONF="$d/etc/slurm.conf" scontrol ping
  start_slurmd "$d" || { tail -5 "$d/log/slurmd.log" "$d/log/slurmctld.log" >&2; return 1; }
}

cmd_pmix_env() {
  local d gen
  d=$(realpath "$1")
  gen=$(set_pmix_env "$d" "$2")
  SLURM_CONF="$d/etc/slurm.conf" scontrol reconfigure
  for _ in $(seq 50); do
    [ "$(step_gen "$d" 2>/dev/null)" = "$gen" ] && { cmd_idle "$d"; return 0; }
    sleep 0.2
  done
  die "steps do not see mpi.conf generation $gen (PMIxEnv=$2)"
}

cmd_idle() {
  local d
  d=$(realpath "$1")
  wait_for "the steps to end" 20 no_steps "$d"
}

no_steps() { [ -z "$(cluster_steps "$1")" ]; }

cmd_stop() {
  local d pid
  d=$(realpath "$1" 2>/dev/null) || return 0
  [ -d "$d/run" ] || return 0
  stop_pidfile "$d/run/slurmd.bg" slurmd
  stop_pidfile "$d/run/slurmctld.bg" slurmctld
  # steps outlive slurmd (slurmstepd daemonizes): end this cluster's, by their ids
  for pid in $(cluster_steps "$d"); do kill -9 "$pid" 2>/dev/null || true; done
  if pid=$(live_pid "$d/munge/munged.pid"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  return 0
}

case "${1:-}" in
  start) [ $# -ge 2 ] || die "usage: cluster.sh start DIR [PMIX_ENV]"; cmd_start "$2" "${3:-}" ;;
  pmix-env) [ $# -ge 3 ] || die "usage: cluster.sh pmix-env DIR PMIX_ENV"; cmd_pmix_env "$2" "$3" ;;
  stop) [ $# -ge 2 ] || die "usage: cluster.sh stop DIR"; cmd_stop "$2" ;;
  steps) [ $# -ge 2 ] || die "usage: cluster.sh steps DIR"; cluster_steps "$(realpath "$2")" ;;
  idle) [ $# -ge 2 ] || die "usage: cluster.sh idle DIR"; cmd_idle "$2" ;;
  *) die "usage: cluster.sh start|pmix-env|steps|idle|stop DIR ..." ;;
esac
