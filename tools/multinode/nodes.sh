#!/usr/bin/env bash
# Emulated nodes on one machine (root): each node is a network, UTS and mount namespace held by
# one process, with its own hostname, an address on a private subnet, a private tmpfs on
# /dev/shm, a private /tmp (a directory DIR/NODE/tmp on DIR's filesystem, as a Debian 12 node's
# /tmp is on its disk), and its own /etc/hosts and OpenPMIx system parameter file (bind mounts).
# The nodes are wired to a bridge in a namespace of its own: the machine's own network is not
# touched, and nothing outside the machine is reachable.
#
#   nodes.sh up DIR N            node0..nodeN (10.77.0.10+i/24); DIR: state (not under /tmp)
#   nodes.sh exec DIR NODE CMD   run CMD inside NODE (cwd kept)
#   nodes.sh agent DIR HOST CMD  Open MPI's plm_rsh_agent: run the words of CMD with sh inside
#                                HOST with a clean environment, as ssh does (PATH, HOME, and the
#                                variables named in DIR/sendenv, as ssh's SendEnv)
#   nodes.sh pids DIR NODE       the processes inside NODE, its holder excluded
#   nodes.sh down DIR            kill every process inside the nodes, remove the namespaces
#
# NODES_TMP=tmpfs at `up`: /tmp is a private tmpfs instead (as on Debian 13).
# Per node, DIR/NODE/pmix-mca-params.conf is what libpmix inside NODE reads as its system file
# (/usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf there): rewrite it in place (`>`).
set -euo pipefail

SUBNET_PREFIX=10.77.0
PMIX_CONF=$(pkg-config --variable=prefix pmix 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/pmix2)/share/pmix-mca-params.conf

die() { echo "nodes: $*" >&2; exit 1; }
holder() { # DIR NODE -> pid of a live holder
  local f="$1/$2.pid" pid
  [ -s "$f" ] || die "no node $2 in $1"
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || die "node $2's holder ($pid) is gone"
  echo "$pid"
}

# Start `unshare ... sleep infinity` (unshare execs sleep: same pid) and wait until it is in
# its own network namespace.
start_holder() { # DIR NAME UNSHARE-FLAGS...
  local dir=$1 name=$2; shift 2
  setsid unshare "$@" sleep infinity </dev/null >/dev/null 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/$name.pid"
  for _ in $(seq 100); do
    if [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] \
      && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" != "$(command -v unshare)" ]; then
      return 0
    fi
    sleep 0.05
  done
  die "holder $name did not start"
}

up() {
  local dir=$1 n=$2 i pid sw out tmp_mount
  [ "$(id -u)" -eq 0 ] || die "must run as root"
  case $dir in /tmp/*) die "DIR must not be under /tmp (private in each node)" ;; esac
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  : >"$dir/sendenv"
  {
    echo "127.0.0.1 localhost"
    for i in $(seq 0 "$n"); do echo "$SUBNET_PREFIX.$((10 + i)) node$i"; done
  } >"$dir/hosts"
  start_holder "$dir" switch --net
  sw=$(cat "$dir/switch.pid")
  nsenter -t "$sw" -n sh -c 'ip link add br0 type bridge && ip link set br0 up && ip link set lo up'
  for i in $(seq 0 "$n"); do
    mkdir -p "$dir/node$i/tmp"
    chmod 1777 "$dir/node$i/tmp"
    [ -f "$dir/node$i/pmix-mca-params.conf" ] || cp "$PMIX_CONF" "$dir/node$i/pmix-mca-params.conf"
    start_holder "$dir" "node$i" --net --uts --mount --propagation private
    tmp_mount="mount --bind '$dir/node$i/tmp' /tmp"
    [ "${NODES_TMP:-disk}" != tmpfs ] || tmp_mount="mount -t tmpfs -o size=256m,mode=1777 tmpfs /tmp"
    pid=$(cat "$dir/node$i.pid")
    nsenter -t "$sw" -n ip link add "v$i" type veth peer name eth0 netns "$pid"
    nsenter -t "$sw" -n sh -c "ip link set v$i master br0 && ip link set v$i up"
    nsenter -t "$pid" -n -u -m sh -c "
      set -e
      hostname node$i
      ip link set lo up
      ip addr add $SUBNET_PREFIX.$((10 + i))/24 dev eth0
      ip link set eth0 up
      mount --bind '$dir/hosts' /etc/hosts
      mount --bind '$dir/node$i/pmix-mca-params.conf' '$PMIX_CONF'
      mount -t tmpfs -o size=256m,mode=1777 tmpfs /dev/shm
      $tmp_mount"
  done
  # node0 reaches every node: a connection to a closed port is refused at once (no ping here)
  pid=$(cat "$dir/node0.pid")
  for i in $(seq 0 "$n"); do
    out=$(nsenter -t "$pid" -n timeout 5 bash -c "echo >/dev/tcp/$SUBNET_PREFIX.$((10 + i))/9" 2>&1 || true)
    [[ $out == *refused* ]] || die "node0 cannot reach node$i: $out"
  done
}

pids_in() { # DIR NODE: every process in NODE's network namespace but its holder
  local h ns p
  h=$(cat "$1/$2.pid")
  ns=$(readlink "/proc/$h/ns/net") || return 0
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != "$h" ] || continue
    [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$ns" ] && echo "$p"
  done
  return 0
}

down() {
  local dir=$1 f name pids
  for f in "$dir"/node*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    pids=$(pids_in "$dir" "$name")
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  done
  for f in "$dir"/node*.pid "$dir"/switch.pid; do
    [ -e "$f" ] || continue
    kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

cmd=${1:-}; shift || true
case $cmd in
  up) [ $# -eq 2 ] || die "usage: up DIR N"; up "$1" "$2" ;;
  exec)
    [ $# -ge 3 ] || die "usage: exec DIR NODE CMD..."
    pid=$(holder "$1" "$2"); shift 2
    exec nsenter -t "$pid" -n -u -m --wd="$PWD" -- "$@" ;;
  agent)
    [ $# -ge 3 ] || die "usage: agent DIR HOST CMD..."
    dir=$1 host=$2; shift 2
    pid=$(holder "$dir" "$host")
    send=()
    while read -r v; do
      [ -n "$v" ] && [ -n "${!v+x}" ] && send+=("$v=${!v}")
    done <"$dir/sendenv"
    exec nsenter -t "$pid" -n -u -m --wd=/ -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
      HOME="${HOME:-/root}" "${send[@]}" /bin/sh -c "$*" ;;
  pids) [ $# -eq 2 ] || die "usage: pids DIR NODE"; pids_in "$1" "$2" ;;
  down) [ $# -eq 1 ] || die "usage: down DIR"; down "$1" ;;
  *) die "usage: nodes.sh up|exec|agent|pids|down DIR ..." ;;
esac
