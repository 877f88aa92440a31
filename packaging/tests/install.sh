#!/usr/bin/env bash
# The project's Debian packages, installed as an admin installs them, in fresh Debian 12 and 13
# chroots (scripts/chroot.sh run: a throwaway overlay each time). Root only. docs/deploy.md
# "Packages", docs/testing.md.
#
#   bash packaging/tests/install.sh
#
# 1. scripts/package.sh bookworm and trixie; lintian on every package: no error.
# 2. For each release, in a fresh chroot (packaging/tests/inside.sh install): apt-get install
#    ./*.deb; every listed file present and root's; a C program built with pkg-config against
#    librshm-dev runs; rshm sweep runs; a probe (an MPI program that Gets job keys, every rank's
#    process keys and cards after a collecting fence) under gds=hash; with the component
#    package: rshm turned on by the example's line in libpmix's parameter file, the probe's
#    answers equal hash's and the clients answered Gets from the store (RSHM_GDS_STATS), an MPI
#    job maps the store read-only, the client preload answers Gets too (RSHM_PRELOAD_STATS);
#    without it (no component for that OpenPMIx line in this tree): the same with both
#    preloads. Then apt-get purge: dpkg knows none of the packages, the component directory is
#    as before, a job runs (with the enabling line left, and removed).
# 3. Debian 12 with its component package installed, then Debian 13's libpmix installed from the
#    Debian 13 archive (inside.sh upgrade): apt's plan removes the component package, no 4.2
#    component is left where libpmix 5.0.7 loads components, pmix_info and an MPI job run.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "packaging install test: skipped (needs root for the chroots)"
  exit 0
fi
command -v lintian >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends lintian >/dev/null

target=${CARGO_TARGET_DIR:-$ROOT/target}
stage=$(mktemp -d /tmp/rshm-packaging-test.XXXXXX)
lintian_pid=
trap '[ -z "$lintian_pid" ] || kill "$lintian_pid" 2>/dev/null; rm -rf "$stage"' EXIT
failed=0
t0=$(date +%s)
for suite in bookworm trixie; do
  bash scripts/chroot.sh build "$suite"
  bash scripts/package.sh "$suite"
  mkdir -p "$stage/$suite/debs"
  cp "$target/debian/$suite"/*.deb "$stage/$suite/debs/"
  cp packaging/tests/inside.sh packaging/tests/probe.c component/tests/c/mpi_ring.c "$stage/$suite/"
done

# lintian runs meanwhile (it takes about as long as the chroot runs); its result is shown after.
lintian --fail-on error "$stage"/bookworm/debs/*.deb "$stage"/trixie/debs/*.deb \
  >"$stage/lintian.out" 2>&1 &
lintian_pid=$!
for suite in bookworm trixie; do
  echo "== $suite: install, use, purge"
  bash scripts/chroot.sh run --bind "$stage/$suite" "$suite" bash /rshm/inside.sh install || failed=1
done
if compgen -G "$stage/bookworm/debs/pmix-gds-rshm_*.deb" >/dev/null; then
  echo "== bookworm: the component package, then Debian 13's libpmix"
  bash scripts/chroot.sh run --bind "$stage/bookworm" bookworm bash /rshm/inside.sh upgrade || failed=1
fi
echo "== lintian"
# Tags below error are listed, not failed on.
lintian_rc=0
wait "$lintian_pid" || lintian_rc=$?
lintian_pid=
if [ "$lintian_rc" -eq 0 ]; then
  echo "ok: lintian: no error in $(ls "$stage"/*/debs/*.deb | wc -l) packages;" \
    "$(grep -c '^W: ' "$stage/lintian.out") warnings"
else
  echo "FAIL: lintian"; failed=1
fi
{ grep -v "running with root privileges" "$stage/lintian.out" || true; } | sed 's/^/    /'
for suite in bookworm trixie; do
  croot=$(bash scripts/chroot.sh path "$suite")
  if compgen -G "$croot/usr/lib/*/pmix2/lib/pmix/pmix_mca_gds_rshm.so" >/dev/null ||
    [ -e "$croot/usr/bin/rshm" ]; then
    echo "FAIL: the cached $suite chroot holds rshm's files"; failed=1
  fi
done
echo "packaging install test: $(($(date +%s) - t0)) s"
[ "$failed" -eq 0 ] && echo "packaging install test: ok" || { echo "packaging install test: FAILED"; exit 1; }
