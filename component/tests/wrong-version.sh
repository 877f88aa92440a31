#!/usr/bin/env bash
# A gds component built for another OpenPMIx line, installed in libpmix's component directory,
# must never break a job: it declines when the framework registers it, says why on the verbose
# log, and the job runs on the components that fit. Root only (a Debian chroot of the other
# release, scripts/chroot.sh). docs/openpmix.md "Install", docs/testing.md.
#
#   bash component/tests/wrong-version.sh        build both components and the chroot, run every case
#
# Each case: a component .so built here (the 4.2 one on this host, the 5.0 one in the Debian 13
# chroot against OpenPMIx 5.0.7's headers), where it goes, and what the jobs there must show.
# Inside a chroot the .so is copied into <libdir>/pmix (the directory libpmix dlopens every
# component of) and removed after; the chroot's overlay (scripts/chroot.sh run) discards it
# anyway, so the cached chroot never holds it. On this host (OpenPMIx 4.2.2, Open MPI 4.1.4) the
# .so goes into a directory of its own named by PMIX_MCA_mca_base_component_path (libpmix scans
# it like its own, whose components stay visible), so that jobs others run on the machine never
# see it.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "wrong-version: skipped (needs root for the chroot)"
  exit 0
fi

# The component for the host's OpenPMIx 4.2 (component/Makefile's default OUT).
make -s -C component >/dev/null
target=${CARGO_TARGET_DIR:-$ROOT/target}
SO42=$target/release/gds-component/pmix_mca_gds_rshm.so
# The component for OpenPMIx 5.0, compiled in the Debian 13 chroot with the same staticlib (the
# checkout is bound into it, so the target directory must be inside the checkout).
bash scripts/chroot.sh build trixie
case "$target" in "$ROOT"/*) ;; *)
  echo "wrong-version: CARGO_TARGET_DIR must be inside the checkout (it is bound into the chroot)" >&2
  exit 2 ;;
esac
rel=${target#"$ROOT"/}
bash scripts/chroot.sh run --bind-rw "$ROOT" trixie make -s -C /rshm/component PMIX_LINE=5.0 \
  RSHM_A="/rshm/$rel/release/librshm_component.a" OUT="/rshm/$rel/release/gds-component-5.0" >/dev/null
SO50=$target/release/gds-component-5.0/pmix_mca_gds_rshm.so
# The component for OpenPMIx 7.0, compiled in the Debian unstable chroot likewise.
bash scripts/chroot.sh build sid
bash scripts/chroot.sh run --bind-rw "$ROOT" sid make -s -C /rshm/component PMIX_LINE=7.0 \
  RSHM_A="/rshm/$rel/release/librshm_component.a" OUT="/rshm/$rel/release/gds-component-7.0" >/dev/null
SO70=$target/release/gds-component-7.0/pmix_mca_gds_rshm.so

stage=$(mktemp -d /tmp/rshm-wrong-version.XXXXXX)
trap 'rm -rf "$stage"' EXIT
cp component/tests/c/mpi_ring.c "$stage/"

# What runs inside the chroot (or on this host): compile the MPI program, install the component
# under test, run the jobs. Arguments: the directory holding the .so and the MPI program's
# source (/rshm in a chroot), the .so's name there, the expectation (decline), and where the .so
# goes: libdir (libpmix's component directory) or path (a directory of its own, named by
# PMIX_MCA_mca_base_component_path).
cat >"$stage/inside.sh" <<'EOF'
#!/bin/bash
set -uo pipefail
dir=$1 so=$2 expect=$3 where=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Shared memory between the two ranks (the TCP BTL finds no pairing in a chroot on 2 cores):
# Open MPI 4's vader, 5's sm.
case "$(mpirun --version 2>/dev/null | head -1)" in
  *" 4."*) export OMPI_MCA_btl=self,vader ;;
  *) export OMPI_MCA_btl=self,sm ;;
esac
work=$(mktemp -d /tmp/rshm-wrong-version-job.XXXXXX)
if [ "$where" = path ]; then
  compdir=$work/components
  mkdir "$compdir"
  export PMIX_MCA_mca_base_component_path=$compdir
else
  compdir=$(pkg-config --variable=libdir pmix)/pmix
  [ -d "$compdir" ] || { echo "FAIL: no component directory $compdir"; exit 1; }
fi
installed=$compdir/pmix_mca_gds_rshm.so
trap 'rm -f "$installed"; rm -rf "$work"' EXIT
cd "$work"
mpicc -O1 -o mpi_ring "$dir/mpi_ring.c" || { echo "FAIL: mpicc"; exit 1; }
echo "libpmix: $(pmix_info --pretty-print 2>/dev/null | sed -n 's/^ *Package: //p;s/^ *PMIX: //Ip' | tr '\n' ' ')"
cp "$dir/$so" "$installed"
fail=0
# One job: its exit status must be 0, its ranks' checks ok, and the decline line present (yes),
# or nothing printed but the ranks' lines (no: no verbose setting asks for anything), or either
# (any).
job() {
  local label=$1 want_line=$2; shift 2
  local out rc=0
  local x=()
  [ "$where" != path ] || x=(-x PMIX_MCA_mca_base_component_path)
  out=$(env "$@" timeout 120 mpirun --oversubscribe "${x[@]}" -n 2 ./mpi_ring 2>&1) || rc=$?
  local ok=$(grep -c '^allreduce [01] ok ' <<<"$out")
  local line=$(grep -c 'gds:rshm: declined' <<<"$out")
  if [ "$rc" -ne 0 ] || [ "$ok" -ne 2 ]; then
    echo "FAIL: $label: exit $rc, $ok of 2 ranks ok"; sed 's/^/    /' <<<"$out" | head -20; fail=1
  elif [ "$want_line" = yes ] && [ "$line" -eq 0 ]; then
    echo "FAIL: $label: no 'gds:rshm: declined' line"; sed 's/^/    /' <<<"$out" | head -20; fail=1
  elif [ "$want_line" = no ] && grep -qv '^\(allreduce\|ring\|split\|maps\) ' <<<"$out"; then
    echo "FAIL: $label: output besides the ranks' lines without a verbose setting"
    grep -v '^\(allreduce\|ring\|split\|maps\) ' <<<"$out" | sed 's/^/    /' | head -5; fail=1
  else
    echo "ok: $label: exit 0, 2 ranks ok, $line decline line(s)"
    [ "$line" -eq 0 ] || grep -m1 'gds:rshm: declined' <<<"$out" | sed 's/^/    /'
  fi
}
case "$expect" in
  decline)
    job "no gds selection, quiet" no
    job "no gds selection, PMIX_MCA_gds_base_verbose=1" yes PMIX_MCA_gds_base_verbose=1
    job "PMIX_MCA_gds=rshm,hash, PMIX_MCA_gds_rshm_verbose=1" yes PMIX_MCA_gds=rshm,hash \
      PMIX_MCA_gds_rshm_verbose=1
    job "PMIX_MCA_gds=rshm,hash, PMIX_MCA_gds_base_verbose=5" yes PMIX_MCA_gds=rshm,hash \
      PMIX_MCA_gds_base_verbose=5
    # Binding every symbol at load: the dlopen fails (a symbol 4.2 had is missing), which the
    # framework skips as a component it cannot open, before the component runs.
    job "PMIX_MCA_gds=rshm,hash, LD_BIND_NOW=1" any PMIX_MCA_gds=rshm,hash LD_BIND_NOW=1
    # pmix_info registers every component: it must run and not list rshm.
    out=$(pmix_info 2>&1); rc=$?
    if [ "$rc" -ne 0 ] || grep -q 'gds: rshm' <<<"$out"; then
      echo "FAIL: pmix_info: exit $rc, rshm listed: $(grep -c 'gds: rshm' <<<"$out")"; fail=1
    else
      echo "ok: pmix_info: exit 0, rshm not listed"
    fi
    ;;
  *) echo "FAIL: unknown expectation $expect"; fail=1 ;;
esac
exit "$fail"
EOF

# case: suite (or host), .so, expectation, and whether to build the chroot (build) or run only
# when it is already built (if-built: sid's OpenPMIx 7.0 never selects a component of gds API
# 1.0.0, but registers it, and so calls into it). The 5.0 component loading and serving under
# its own line is component/tests/openpmix50.sh's.
cases=("trixie|$SO42|decline|build" "sid|$SO42|decline|if-built" "host|$SO50|decline|host"
  "sid|$SO50|decline|if-built" "host|$SO70|decline|host" "trixie|$SO70|decline|build")

failed=0
for c in "${cases[@]}"; do
  IFS='|' read -r suite so expect when <<<"$c"
  built_for="the host's OpenPMIx $(pkg-config --modversion pmix)"
  [ "$so" != "$SO50" ] || built_for="OpenPMIx 5.0"
  [ "$so" != "$SO70" ] || built_for="OpenPMIx 7.0"
  echo "== $(basename "$so") (built for $built_for) in $suite: expect $expect"
  name=case-$suite-$(basename "$(dirname "$so")").so
  cp "$so" "$stage/$name"
  if [ "$when" = host ]; then
    bash "$stage/inside.sh" "$stage" "$name" "$expect" path || failed=1
    continue
  elif [ "$when" = build ]; then
    bash scripts/chroot.sh build "$suite"
  elif ! bash scripts/chroot.sh path "$suite" >/dev/null; then
    echo "skipped: no $suite chroot (bash scripts/chroot.sh build $suite)"
    continue
  fi
  bash scripts/chroot.sh run --bind "$stage" "$suite" bash /rshm/inside.sh /rshm "$name" "$expect" \
    libdir || failed=1
  # The cached chroot is left as it was.
  croot=$(bash scripts/chroot.sh path "$suite")
  if compgen -G "$croot/usr/lib/*/pmix2/lib/pmix/pmix_mca_gds_rshm.so" >/dev/null; then
    echo "FAIL: the component was left in the cached $suite chroot"; failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "wrong-version: ok" || { echo "wrong-version: FAILED"; exit 1; }
