#!/usr/bin/env bash
# The gds component of each OpenPMIx line under a real launcher: OpenPMIx 4.2.2 under Open MPI
# 4.1.4's mpirun on this host, and OpenPMIx 5.0.7 under Open MPI 5.0.7's mpirun (PRRTE 3.0.8) in
# the Debian 13 chroot (scripts/chroot.sh; root only, skipped otherwise); with LINES=7.0,
# OpenPMIx 7.0.0rc1 under Open MPI 6.0.0rc2's mpirun in the Debian unstable chroot.
# docs/openpmix.md "The OpenPMIx lines", docs/testing.md.
#
#   bash component/tests/jobs.sh                  both lines, 4 and 16 ranks
#   NPS=4 LINES=5.0 bash component/tests/jobs.sh  the given rank counts and lines (4.2 5.0 7.0)
#
# Each line's component is compiled against that line's internal headers (the 5.0 one inside the
# chroot) and linked with the staticlib built here (the Rust half is the same for every line).
# jobs-run.sh runs the jobs: for each rank count, a first job records the registration mpirun
# makes (RSHM_RECORD_REGISTRATIONS); from it a corpus is made that Gets every key the
# registration holds (job keys; node, app and session array keys with and without their realm
# qualifier; every rank's process keys), then every rank's global and local card after a
# collecting fence, and times a few Gets (4 ranks). That corpus runs as a tools/pmix-host PMIx
# client under
#   hash      PMIX_MCA_gds=hash
#   default   no gds selection (the clients take gds/ds21 on 4.2.2, gds/shmem2 on 5.0.7)
#   rshm      PMIX_MCA_gds=rshm,hash with the component (server and clients)
#   preload   rshm + the client preload (-x LD_PRELOAD=librshm_client_preload.so)
# Every answer of each must equal hash's (values naming the launcher's pid or the session made
# equal first) but for the documented exceptions of jobs-differences-LINE.txt; each rshm client
# must have been answered from the store and have mapped it read-only, and the store's
# directory must be empty after the job; a card-only job under rshm + preload must answer every
# rank's cards from the store (RSHM_PRELOAD_STATS) and leave nothing to libpmix; and an MPI
# program (component/tests/c/mpi_ring.c, 4 ranks) must pass its checks under rshm and rshm +
# preload.
# Outputs, generated corpora and the Get p50 table: target/component-jobs/LINE/.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
target=${CARGO_TARGET_DIR:-$ROOT/target}
case "$target" in /*) ;; *) target=$ROOT/$target ;; esac
cargo build --release -q -p rshm-component -p rshm-client-preload
fail=0
for line in ${LINES:-4.2 5.0}; do
  echo "== OpenPMIx $line"
  case "$line" in
    4.2)
      if [ "$(pkg-config --modversion pmix | cut -d. -f1,2)" != 4.2 ]; then
        echo "skipped: this host's OpenPMIx is $(pkg-config --modversion pmix)"
        continue
      fi
      env NPS="${NPS:-4 16}" LINE=4.2 SRC="$ROOT" TARGET="$target" \
        bash component/tests/jobs-run.sh || fail=1
      ;;
    5.0)
      if [ "$(id -u)" -ne 0 ]; then
        echo "skipped: needs root for the Debian 13 chroot"
        continue
      fi
      case "$target" in "$ROOT"/*) ;; *)
        echo "jobs: CARGO_TARGET_DIR must be inside the checkout (it is bound into the chroot)" >&2
        exit 2 ;;
      esac
      bash scripts/chroot.sh build trixie
      bash scripts/chroot.sh run --bind-rw "$ROOT" trixie env NPS="${NPS:-4 16}" LINE=5.0 \
        TARGET="/rshm/${target#"$ROOT"/}" bash /rshm/component/tests/jobs-run.sh || fail=1
      ;;
    7.0)
      if [ "$(id -u)" -ne 0 ]; then
        echo "skipped: needs root for the Debian unstable chroot"
        continue
      fi
      case "$target" in "$ROOT"/*) ;; *)
        echo "jobs: CARGO_TARGET_DIR must be inside the checkout (it is bound into the chroot)" >&2
        exit 2 ;;
      esac
      bash scripts/chroot.sh build sid
      bash scripts/chroot.sh run --bind-rw "$ROOT" sid env NPS="${NPS:-4 16}" LINE=7.0 \
        TARGET="/rshm/${target#"$ROOT"/}" bash /rshm/component/tests/jobs-run.sh || fail=1
      ;;
    *) echo "jobs: unknown line $line (4.2, 5.0 or 7.0)" >&2; exit 2 ;;
  esac
done
[ "$fail" -eq 0 ] && echo "component jobs: ok" || { echo "component jobs: FAILED"; exit 1; }
