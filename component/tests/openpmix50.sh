#!/usr/bin/env bash
# The OpenPMIx 5.0 component under Open MPI 5.0.7's mpirun (PRRTE 3.0.8, OpenPMIx 5.0.7), in the
# Debian 13 chroot (scripts/chroot.sh). Root only. docs/openpmix.md "Two OpenPMIx lines",
# docs/testing.md.
#
#   bash component/tests/openpmix50.sh            4 and 16 ranks
#   NPS="4" bash component/tests/openpmix50.sh    the given rank counts
#
# The component (make PMIX_LINE=5.0) is compiled inside the chroot against OpenPMIx 5.0.7's
# internal headers and linked with the staticlib built here (the Rust half is the same for every
# line). For each rank count, a first job records the registration mpirun makes
# (RSHM_RECORD_REGISTRATIONS); from it a corpus is made that Gets every key the registration
# holds (job keys; node, app and session array keys with and without their realm qualifier;
# every rank's process keys), then every rank's global and local card after a collecting fence,
# and times a few Gets. That corpus runs as a tools/pmix-host PMIx client under
#   hash      PMIX_MCA_gds=hash
#   default   no gds selection (the clients take gds/shmem2 on 5.0.7)
#   rshm      PMIX_MCA_gds=rshm,hash with the component (server and clients)
#   preload   rshm + the client preload (-x LD_PRELOAD=librshm_preload.so)
# Every answer of each must equal hash's (values naming the launcher's pid or the session id
# made equal first; openpmix50-differences.txt lists the documented exceptions), each rshm
# client must have been answered from the store, and a card-only job under rshm + preload must
# answer every rank's cards from the store (RSHM_PRELOAD_STATS) and leave nothing to libpmix.
# The outputs, the generated corpora and the Get p50 table are in target/openpmix50/.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "openpmix50: skipped (needs root for the chroot)"
  exit 0
fi

target=${CARGO_TARGET_DIR:-$ROOT/target}
case "$target" in "$ROOT"/*) ;; *)
  echo "openpmix50: CARGO_TARGET_DIR must be inside the checkout (it is bound into the chroot)" >&2
  exit 2 ;;
esac
cargo build --release -q -p rshm-gds-component -p rshm-preload
bash scripts/chroot.sh build trixie
rel=${target#"$ROOT"/}
mkdir -p "$target/openpmix50"
bash scripts/chroot.sh run --bind-rw "$ROOT" trixie env NPS="${NPS:-4 16}" TARGET="/rshm/$rel" \
  bash /rshm/component/tests/openpmix50-inside.sh
