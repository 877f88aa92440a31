#!/bin/bash
# Runs inside a fresh Debian chroot (packaging/tests/install.sh): the project's packages installed
# as an admin installs them, used, turned on and off, purged; or the upgrade to another libpmix.
#
#   bash inside.sh install      /rshm/debs/*.deb: install, jobs, purge
#   bash inside.sh upgrade      /rshm/debs/*.deb installed, then Debian 13's libpmix: the component
#                               package must go and jobs still run
#
# /rshm holds debs/, probe.c and mpi_ring.c. Prints "ok: ..." / "FAIL: ..." lines; exit 1 on a
# failure.
set -uo pipefail
mode=$1
export DEBIAN_FRONTEND=noninteractive
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Shared memory between the ranks (the TCP BTL finds no pairing in a chroot): Open MPI 4's
# vader, which Open MPI 5 calls sm.
case "$(mpirun --version 2>/dev/null | sed -n 's/.*Open MPI[^0-9]*\([0-9]*\)\..*/\1/p' | head -1)" in
  4) export OMPI_MCA_btl=self,vader ;;
  *) export OMPI_MCA_btl=self,sm ;;
esac
MA=x86_64-linux-gnu
params=/usr/lib/$MA/pmix2/share/pmix-mca-params.conf
compdir=$(pkg-config --variable=libdir pmix)/pmix
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

mkdir -p /tmp/pk && cd /tmp/pk || exit 1
cp /rshm/debs/*.deb /rshm/probe.c /rshm/mpi_ring.c .
pkgs=$(for d in ./*.deb; do dpkg-deb -f "$d" Package; done | tr '\n' ' ')
has_component=no
[[ " $pkgs " == *" pmix-gds-rshm "* ]] && has_component=yes
ls -A "$compdir" | sort >comp-before

echo "-- $suite: libpmix $(dpkg-query -W -f '${Version}' libpmix-dev), packages: $pkgs"
if out=$(apt-get install -y -q --no-install-recommends ./*.deb 2>&1); then
  ok "apt-get install ./*.deb"
else
  bad "apt-get install ./*.deb"; tail -20 <<<"$out"; exit 1
fi
for p in $pkgs; do
  [ "$(dpkg-query -W -f '${db:Status-Abbrev}' "$p")" = "ii " ] || bad "$p is not installed"
done

# Every file root's, no file besides what dpkg lists.
for p in $pkgs; do
  while read -r f; do
    [ -e "$f" ] || [ -L "$f" ] || { bad "$p: $f listed, missing"; continue; }
    [ "$(stat -c %U:%G "$f")" = root:root ] || bad "$p: $f owned by $(stat -c %U:%G "$f")"
  done < <(dpkg -L "$p")
done
ok "installed files present and root's"

mpicc -O1 -o probe probe.c $(pkg-config --cflags --libs pmix) || bad "mpicc probe"
mpicc -O1 -o mpi_ring mpi_ring.c || bad "mpicc mpi_ring"

# The development package: a C program linked by pkg-config against the three libraries,
# which opens a store, attaches a client to it and closes it.
cat >dev.c <<'EOF'
#define _GNU_SOURCE
#include <rshm_server.h>
#include <rshm_client.h>
#include <pmi2.h>
#include <stdio.h>
int main(void) {
    struct rshm_server_t *s = NULL;
    if (rshm_server_open(NULL, 0, &s) != PMIX_SUCCESS) { puts("open failed"); return 1; }
    pmix_proc_t me;
    PMIX_LOAD_PROCID(&me, "dev", 0);
    pmix_status_t rc = rshm_client_attach(rshm_server_path(s), &me);
    printf("store %s attach %d pmi2 %p\n", rshm_server_path(s), rc, (void *) &PMI2_Init);
    rshm_client_detach();
    rshm_server_close(s);
    return rc == PMIX_SUCCESS ? 0 : 1;
}
EOF
if gcc -o dev dev.c $(pkg-config --cflags --libs rshm-server rshm-client rshm-pmi2) &&
  out=$(./dev 2>&1); then
  ok "librshm-dev: pkg-config build, runs: $out"
  deps=$(ldd dev)
  for l in server client pmi2; do
    grep -Eq "librshm_$l.so.0 => (/usr)?/lib/$MA/librshm_$l.so.0" <<<"$deps" ||
      bad "dev not linked to librshm_$l.so.0"
  done
else
  bad "librshm-dev: $out"
fi
out=$(rshm sweep /dev/shm 2>&1) && ok "rshm sweep: ${out##*$'\n'}" || bad "rshm sweep: $out"

# A job: job FILE PROG [VAR=value...] [-- MPIRUN-ARGS...]: mpirun -n 2 of PROG, the variables in
# mpirun's environment (the server's), the arguments to mpirun; the sorted output in FILE, its
# stderr in FILE.err.
job() {
  local file=$1 prog=$2 envs=() args=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; args=("$@"); }
  env "${envs[@]}" timeout 120 mpirun --oversubscribe -n 2 "${args[@]}" "./$prog" \
    >"$file.raw" 2>"$file.err"
  local rc=$?
  sort "$file.raw" >"$file"
  return $rc
}
ring_ok() { [ "$(grep -c '^allreduce [01] ok ' "$1")" -eq 2 ] && [ "$(grep -c '^ring [01] ok ' "$1")" -eq 2 ]; }
# Sum of "answered N" over the stats files in a directory.
answered() { cat "$1"/* 2>/dev/null | awk '$1 == "answered" { n += $2 } END { print n + 0 }'; }

job hash.out probe PMIX_MCA_gds=hash || bad "probe under gds=hash: $(head -5 hash.out.err)"
[ "$(grep -c ' rshm.probe.card string card-of-rank-' hash.out)" -eq 4 ] ||
  bad "probe under gds=hash: not every card read"
ok "probe under gds=hash: $(wc -l <hash.out) answers"

if [ "$has_component" = yes ]; then
  pmix_info 2>/dev/null | grep -q "MCA gds: rshm" && ok "pmix_info lists gds: rshm" ||
    bad "pmix_info does not list gds: rshm"
  # Installed, no line: off. Jobs that choose no gds never select the component.
  mkdir -p gst0
  job default.out probe -- -x RSHM_GDS_STATS=/tmp/pk/gst0 || bad "probe, no line: $(head -5 default.out.err)"
  diff -u hash.out default.out >/dev/null && [ -z "$(ls gst0)" ] &&
    ok "installed, no line: off (answers equal hash's, the component not selected: no stats file)" ||
    { bad "installed, no line: $(ls gst0 | wc -l) stats files, answers: $(diff hash.out default.out | wc -l) lines differ"; }
  # Turning rshm on: the documented line, as the example ships it.
  grep -v '^#' "/usr/share/doc/pmix-gds-rshm/examples/pmix-mca-params.conf" | grep . >>"$params"
  ok "enabled: '$(tail -1 "$params")' in $params"
  mkdir -p gst
  job rshm.out probe RSHM_GDS_STATS=/tmp/pk/gst PMIX_MCA_gds_rshm_verbose=1 -- -x RSHM_GDS_STATS ||
    bad "probe with rshm on: $(head -5 rshm.out.err)"
  diff -u hash.out rshm.out >/dev/null && ok "probe with rshm on: answers equal hash's" ||
    { bad "probe with rshm on: answers differ from hash's"; diff -u hash.out rshm.out | head -20; }
  grep -q 'rshm: store /.*rshm-' rshm.out.err && ok "server: $(grep -m1 'rshm: store' rshm.out.err)" ||
    bad "no server store line: $(head -5 rshm.out.err)"
  ! grep -q 'declines' rshm.out.err || bad "a client declined the store: $(grep -m1 declines rshm.out.err)"
  n=$(answered gst)
  [ "$n" -gt 0 ] && ok "component: $n Gets answered from the store ($(ls gst | wc -l) stats files)" ||
    bad "component: no Get answered from the store"
  job ring.out mpi_ring && ring_ok ring.out && grep -q '^maps [01] r--s /.*/rshm-[0-9]*-[0-9a-f]*/rshm-' ring.out &&
    ok "MPI job with rshm on: 2 ranks ok, store mapped read-only" ||
    bad "MPI job with rshm on: $(cat ring.out ring.out.err | head -10)"
  mkdir -p pst
  job pre.out probe -- -x RSHM_PRELOAD_STATS=/tmp/pk/pst \
    -x LD_PRELOAD=/usr/lib/$MA/rshm/librshm_client_preload.so ||
    bad "probe with rshm on + client preload: $(head -5 pre.out.err)"
  diff -u hash.out pre.out >/dev/null && ok "probe with rshm on + client preload: answers equal hash's" ||
    { bad "probe + preload: answers differ"; diff -u hash.out pre.out | head -20; }
  n=$(answered pst)
  [ "$n" -gt 0 ] && ok "client preload: $n Gets answered from the store" ||
    bad "client preload: no Get answered from the store"
  # Turning it off with the component installed: the line removed.
  sed -i '/^gds = rshm,hash$/d' "$params"
  mkdir -p gst1
  job off.out probe -- -x RSHM_GDS_STATS=/tmp/pk/gst1 || bad "probe, line removed: $(head -5 off.out.err)"
  diff -u hash.out off.out >/dev/null && [ -z "$(ls gst1)" ] && [ ! -s off.out.err ] &&
    ok "line removed: off (answers equal hash's, the component not selected: no stats file, stderr empty)" ||
    bad "line removed: $(ls gst1 | wc -l) stats files, $(diff hash.out off.out | wc -l) lines differ, $(head -3 off.out.err)"
  echo 'gds = rshm,hash' >>"$params"
else
  # No component for this OpenPMIx: the preloads serve the job data (docs/openpmix.md).
  mkdir -p pst
  job pre.out probe LD_PRELOAD=/usr/lib/$MA/rshm/librshm_server_preload.so -- \
    -x RSHM_PRELOAD_STATS=/tmp/pk/pst -x LD_PRELOAD=/usr/lib/$MA/rshm/librshm_client_preload.so ||
    bad "probe with both preloads: $(head -5 pre.out.err)"
  diff -u hash.out pre.out >/dev/null && ok "probe with both preloads: answers equal hash's" ||
    { bad "probe with both preloads: answers differ from hash's"; diff -u hash.out pre.out | head -20; }
  n=$(answered pst)
  [ "$n" -gt 0 ] && ok "preloads: $n Gets answered from the store" ||
    bad "preloads: no Get answered from the store ($(cat pre.out.err | head -3))"
fi

if [ "$mode" = install ]; then
  if out=$(apt-get purge -y -q $pkgs 2>&1); then ok "apt-get purge"; else bad "apt-get purge: $(tail -5 <<<"$out")"; fi
  for p in $pkgs; do
    dpkg -L "$p" >/dev/null 2>&1 && bad "dpkg -L $p still lists files"
    [ -z "$(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null)" ] ||
      bad "$p: dpkg still knows it ($(dpkg-query -W -f '${db:Status-Abbrev}' "$p"))"
    [ ! -e "/usr/share/doc/$p" ] || bad "/usr/share/doc/$p left"
  done
  ls -A "$compdir" | sort >comp-after
  diff comp-before comp-after >/dev/null && ok "purged: no package known to dpkg, $compdir as before" ||
    bad "purged: $compdir differs: $(diff comp-before comp-after | tr '\n' ' ')"
  for d in /usr/lib/$MA/rshm /usr/include/rshm; do [ ! -e "$d" ] || bad "$d left"; done
  ls /usr/lib/$MA/librshm* /usr/lib/$MA/pkgconfig/rshm-* /usr/bin/rshm 2>/dev/null && bad "files left"
  if [ "$has_component" = yes ]; then
    # The enabling line is the admin's: a job with it left in place still runs (libpmix warns
    # that the component is missing); turning rshm off is removing it.
    job left.out mpi_ring && ring_ok left.out && ok "after purge, line left: MPI job runs ($(grep -c 'requested component was not found' left.out.err) 'component was not found' warnings)" ||
      bad "after purge, line left: $(cat left.out left.out.err | head -10)"
    sed -i '/^gds = rshm,hash$/d' "$params"
  fi
  job after.out mpi_ring && ring_ok after.out && [ ! -s after.out.err ] &&
    ok "after purge: MPI job runs, nothing on stderr" ||
    bad "after purge: $(cat after.out after.out.err | head -10)"
  job after-probe.out probe && diff -u hash.out after-probe.out >/dev/null &&
    ok "after purge: probe answers equal hash's" || bad "after purge: probe differs"
fi

if [ "$mode" = upgrade ]; then
  # The release upgrade's first step: the apt sources name Debian 13. apt's plan for the whole
  # upgrade, then Debian 13's libpmix (libpmix2t64 5.0.7, which replaces libpmix2 and provides
  # libpmix2 (= 5.0.7-1)) installed for real, with what it needs of Debian 13 (libc6, ...).
  echo "deb http://deb.debian.org/debian trixie main" >/etc/apt/sources.list
  rm -f /etc/apt/sources.list.d/*
  apt-get update -q >/tmp/apt-update.log 2>&1 || { bad "apt-get update"; tail -5 /tmp/apt-update.log; }
  plan=$(apt-get -s full-upgrade 2>&1)
  grep -q '^Remv pmix-gds-rshm ' <<<"$plan" &&
    ok "apt's plan for the upgrade to Debian 13 removes pmix-gds-rshm ($(grep -m1 'upgraded,' <<<"$plan"))" ||
    bad "apt's full-upgrade plan keeps pmix-gds-rshm"
  if out=$(apt-get install -y -q --no-install-recommends libpmix2t64 libpmix-bin 2>&1); then
    ok "libpmix $(dpkg-query -W -f '${Version}' libpmix2t64) installed; removed: $(sed -n 's/^Removing \([^ ]*\) .*/\1/p' <<<"$out" | tr '\n' ' ')"
  else
    bad "apt-get install libpmix2t64: $(tail -10 <<<"$out")"
  fi
  [ -z "$(dpkg-query -W -f '${db:Status-Abbrev}' pmix-gds-rshm 2>/dev/null)" ] &&
    ok "pmix-gds-rshm is no longer installed" || bad "pmix-gds-rshm: $(dpkg-query -W -f '${db:Status-Abbrev}' pmix-gds-rshm)"
  if ls "$compdir"/pmix_mca_gds_rshm.so >/dev/null 2>&1; then
    bad "a 4.2 component is left in $compdir"
  else
    ok "$compdir holds: $(ls "$compdir" | tr '\n' ' ')"
  fi
  grep -q '^gds = rshm,hash$' "$params" && line=kept || line="gone (libpmix2t64's file replaced libpmix2's)"
  ok "the enabling line after the upgrade: $line"
  v=$(pmix_info --pretty-print 2>/dev/null | sed -n 's/^ *PMIX: *//p' | head -1)
  if pmix_info >pi.out 2>&1 && ! grep -q 'gds: rshm' pi.out; then
    ok "pmix_info (OpenPMIx $v) runs and lists no rshm"
  else
    bad "pmix_info ($v): $(grep -m3 -i 'rshm\|error' pi.out)"
  fi
  job up.out mpi_ring && ring_ok up.out && ok "MPI job (Open MPI 4.1.4) on libpmix $v: 2 ranks ok" ||
    bad "MPI job on libpmix $v: $(cat up.out up.out.err | head -10)"
fi
exit $fail
