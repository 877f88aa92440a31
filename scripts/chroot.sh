#!/usr/bin/env bash
# Debian chroots of other releases (trixie: OpenPMIx 5.0.7 / Open MPI 5.0.7; sid: OpenPMIx 7.0),
# for tests that run jobs against another libpmix than the host's. Root only. docs/testing.md.
#
#   bash scripts/chroot.sh build SUITE          build the chroot of SUITE, or reuse the cached one
#   bash scripts/chroot.sh run [OPTS] SUITE CMD...   run CMD inside it (exit status: CMD's)
#       --bind DIR       DIR (e.g. the checkout) at /rshm inside, read-only
#       --bind-rw DIR    the same, writable
#   bash scripts/chroot.sh path SUITE           print the chroot's directory (exit 1 if not built)
#   bash scripts/chroot.sh remove SUITE         delete the cached chroot
#
# SUITE: trixie, sid or bookworm. The chroots live outside the checkout, in
# $RSHM_CHROOT_CACHE (default /var/cache/rshm), as chroot-SUITE/, so a fresh clone reuses them.
# A chroot is built in a temporary directory and renamed into place only when complete; its
# stamp file (.rshm-chroot-stamp) records the suite, mirror and package list, and a chroot whose
# stamp differs from what this script would build is rebuilt.
#
# run never changes the cached chroot and leaves nothing mounted: CMD runs in a mount and pid
# namespace of its own (unshare), on an overlay whose upper layer is a tmpfs (what CMD writes,
# e.g. a component copied into libpmix's directory, is gone when it exits), with a fresh /proc,
# the host's /dev and /sys bound (sys read-only), private tmpfs on /dev/shm and /tmp, and an
# /etc/hosts naming this machine's hostname. When CMD exits, every process it left is killed
# with the namespace, and the mounts go with it. Concurrent runs are independent; a build or
# remove waits for running jobs of that suite (flock: runs shared, build exclusive).
# CMD gets a clean environment (PATH, HOME=/root, LANG=C.UTF-8, TERM): pass variables with
# `env VAR=value CMD...`.
set -euo pipefail

CACHE=${RSHM_CHROOT_CACHE:-/var/cache/rshm}
MIRROR=${RSHM_CHROOT_MIRROR:-http://deb.debian.org/debian}
STAMP=.rshm-chroot-stamp
INSIDE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() { echo "chroot.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# What a job inside needs: the PMIx and MPI development files, a compiler, and ps/hostname.
packages() {
  local p=(libpmix-dev libpmix-bin openmpi-bin libopenmpi-dev gcc make pkg-config procps hostname)
  case "$1" in
    trixie | bookworm) p+=(slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins) ;;
  esac
  printf '%s\n' "${p[@]}" | sort
}

stamp_text() {
  printf 'format 1\nsuite %s\nmirror %s\n' "$1" "$MIRROR"
  packages "$1" | sed 's/^/package /'
}

check_suite() {
  case "${1:-}" in
    trixie | sid | bookworm) ;;
    *) die "unknown suite '${1:-}' (trixie, sid or bookworm)" ;;
  esac
}

need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"; }

root_of() { echo "$CACHE/chroot-$1"; }

# An fd on the suite's lock file: flock -s for runs, -x for build and remove.
lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/chroot-$2.lock"
  flock "$1" 9
}

up_to_date() { [ -f "$1/$STAMP" ] && [ "$(cat "$1/$STAMP")" = "$(stamp_text "$2")" ]; }

# Nothing may be mounted below a directory we delete (run mounts only in its own namespace;
# this guards against a mount made by hand).
assert_unmounted() {
  if findmnt -rn -o TARGET | awk -v d="$1/" 'index($0 "/", d) == 1 { f = 1 } END { exit !f }'; then
    die "something is mounted below $1: not deleting it"
  fi
}

build() {
  local suite=$1 root tmp t0
  root=$(root_of "$suite")
  lock -x "$suite"
  if up_to_date "$root" "$suite"; then
    echo "chroot.sh: $suite: up to date ($root)"
    return 0
  fi
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  t0=$(date +%s)
  rm -f "$CACHE/.chroot-$suite.build."*.log
  tmp=$(mktemp -d "$CACHE/.chroot-$suite.build.XXXXXX")
  chmod 0755 "$tmp"   # the root of a system: other users (munge's postinst, _apt) walk it
  # A failed build leaves its log ($tmp.log, also shown) until the next build.
  # shellcheck disable=SC2064
  trap "assert_unmounted '$tmp' && rm -rf '$tmp'" EXIT
  echo "chroot.sh: $suite: building in $tmp"
  local pkgs
  pkgs=$(packages "$suite" | tr '\n' ' ')
  # In a mount namespace of its own: whatever debootstrap or the package scripts mount goes
  # away with it, even if they fail half way.
  unshare --mount --propagation private bash -euo pipefail -c '
    suite=$1 tmp=$2 mirror=$3 pkgs=$4
    debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
      { tail -n 30 "$tmp.log" >&2; exit 1; }
    # sid'\''s Release file may be past its Valid-Until date on a mirror snapshot; no service
    # starts inside (munge and slurmd would on install): policy-rc.d refuses every start.
    printf "Acquire::Check-Valid-Until \"false\";\n" >"$tmp/etc/apt/apt.conf.d/99rshm"
    printf "#!/bin/sh\nexit 101\n" >"$tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$tmp/usr/sbin/policy-rc.d"
    mount -t proc proc "$tmp/proc"
    mount --bind /dev "$tmp/dev"
    mount --bind /sys "$tmp/sys"
    inch() { chroot "$tmp" env -i PATH='"$INSIDE_PATH"' HOME=/root LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive "$@"; }
    { inch apt-get update -q && inch apt-get install -y -q --no-install-recommends $pkgs &&
      inch apt-get clean; } >>"$tmp.log" 2>&1 || { tail -n 30 "$tmp.log" >&2; exit 1; }
    rm -rf "$tmp"/var/lib/apt/lists/*
    umount "$tmp/sys" "$tmp/dev" "$tmp/proc"
  ' _ "$suite" "$tmp" "$MIRROR" "$pkgs"
  rm -f "$tmp.log"
  stamp_text "$suite" >"$tmp/$STAMP"
  if [ -e "$root" ]; then
    assert_unmounted "$root"
    mv "$root" "$tmp.old"
    mv "$tmp" "$root"
    rm -rf "$tmp.old"
  else
    mv "$tmp" "$root"
  fi
  trap - EXIT
  echo "chroot.sh: $suite: built in $(($(date +%s) - t0)) s, $(du -sh "$root" | cut -f1) ($root)"
}

run() {
  local bind="" mode=ro
  while [ $# -gt 0 ]; do
    case "$1" in
      --bind) bind=$2 mode=ro; shift 2 ;;
      --bind-rw) bind=$2 mode=rw; shift 2 ;;
      --) shift; break ;;
      -*) die "unknown option $1" ;;
      *) break ;;
    esac
  done
  [ $# -ge 2 ] || usage
  local suite=$1; shift
  check_suite "$suite"
  local root
  root=$(root_of "$suite")
  lock -s "$suite"
  up_to_date "$root" "$suite" ||
    die "$suite: no chroot, or an outdated one, in $root: run 'bash scripts/chroot.sh build $suite'"
  [ -z "$bind" ] || bind=$(cd "$bind" && pwd)
  # The lock fd stays open in the namespace's processes until CMD's last process is gone.
  unshare --mount --pid --fork --propagation private -- \
    bash "$0" _inside "$root" "$bind" "$mode" "$(hostname)" "$@"
}

# In the run's own mount and pid namespace (pid 1 here).
inside() {
  local root=$1 bind=$2 mode=$3 host=$4; shift 4
  # top and m stay global: the EXIT trap reads them.
  top=$(mktemp -d /tmp/rshm-chroot.XXXXXX)
  mount -t tmpfs -o mode=0755 rshm-chroot "$top"
  mkdir "$top/upper" "$top/work" "$top/root"
  m=$top/root
  # Nothing stays mounted once the namespace is gone; unmount anyway, innermost first.
  trap 'umount -R "$m" 2>/dev/null; umount "$top" 2>/dev/null; rmdir "$top" 2>/dev/null' EXIT
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$top/upper,workdir=$top/work" "$m"
  mount -t proc proc "$m/proc"
  mount --bind /sys "$m/sys"
  mount -o remount,bind,ro "$m/sys"
  mount --rbind /dev "$m/dev"
  mount -t tmpfs -o mode=1777 shm "$m/dev/shm"
  mount -t tmpfs -o mode=1777 tmp "$m/tmp"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$host" >"$m/etc/hosts"
  if [ -n "$bind" ]; then
    mkdir -p "$m/rshm"
    mount --bind "$bind" "$m/rshm"
    [ "$mode" = rw ] || mount -o remount,bind,ro "$m/rshm"
  fi
  local rc=0
  chroot "$m" /usr/bin/env -i PATH="$INSIDE_PATH" HOME=/root LANG=C.UTF-8 \
    TERM="${TERM:-dumb}" "$@" || rc=$?
  return "$rc"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  build) [ $# -eq 1 ] || usage; check_suite "$1"; need_root; build "$1" ;;
  run) need_root; run "$@" ;;
  _inside) inside "$@" ;;
  path)
    [ $# -eq 1 ] || usage; check_suite "$1"
    up_to_date "$(root_of "$1")" "$1" || exit 1
    root_of "$1"
    ;;
  remove)
    [ $# -eq 1 ] || usage; check_suite "$1"; need_root
    lock -x "$1"
    r=$(root_of "$1")
    [ ! -e "$r" ] || { assert_unmounted "$r"; rm -rf "$r"; }
    ;;
  *) usage ;;
esac
