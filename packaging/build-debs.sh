#!/usr/bin/env bash
# Assemble rshm's binary packages from staged build products. Run by scripts/package.sh, on the
# host when it is the target release, else inside that release's chroot (so that dpkg-shlibdeps
# and pkg-config answer for the release the packages are for). docs/deploy.md, "Packages".
#
#   bash packaging/build-debs.sh STAGE OUT
#
# STAGE holds lib/ (librshm_server.so, librshm_client.so, librshm_pmi2.so with their sonames
# set, librshm_server.a, librshm_client_preload.so, librshm_server_preload.so), bin/rshm and, when a
# component was built for this release's OpenPMIx, component/pmix_mca_gds_rshm.so. OUT receives
# the .debs. Environment (set by scripts/package.sh): DEB_VERSION, UPSTREAM_VERSION,
# DEB_SUITE, MAINTAINER, SOURCE_DATE_EPOCH. Run from the root of the source tree.
set -euo pipefail
STAGE=$1 OUT=$2
: "${DEB_VERSION:?}" "${UPSTREAM_VERSION:?}" "${DEB_SUITE:?}" "${MAINTAINER:?}" "${SOURCE_DATE_EPOCH:?}"
export SOURCE_DATE_EPOCH
ARCH=amd64
MA=x86_64-linux-gnu
[ "$(dpkg --print-architecture)" = "$ARCH" ] || { echo "build-debs: only $ARCH is packaged" >&2; exit 2; }
for t in dpkg-deb dpkg-shlibdeps strip pkg-config gzip; do
  command -v "$t" >/dev/null || { echo "build-debs: $t is missing (dpkg-dev, binutils, pkg-config)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/rshm-debs.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT"
rm -f "$OUT"/*.deb

# libpmix of this release: its package (libpmix2 on Debian 12, libpmix2t64 on Debian 13), its
# version, and the directory it loads components from.
pmix_libdir=$(pkg-config --variable=libdir pmix)
pmix_pkg=$(dpkg -S "$(readlink -f "$pmix_libdir/libpmix.so.2")" | head -1 | cut -d: -f1)
# The package's upstream version (pkg-config's may carry a suffix such as 4.2.2rc2, which dpkg
# sorts after 4.2.2).
pmix_version=$(dpkg-query -W -f '${Version}' "$pmix_pkg" | sed 's/^[0-9]*://; s/-[^-]*$//')
pmix_line=$(sed -n 's/^\([0-9]*\)\.\([0-9]*\)\..*/\1.\2/p' <<<"$pmix_version")
pmix_next=${pmix_line%.*}.$((${pmix_line#*.} + 1))
compdir=$pmix_libdir/pmix

# A package tree: DEBIAN/ and usr/share/doc/PKG with copyright and changelogs.
new_pkg() {
  local p=$1 d=$work/$1
  mkdir -p "$d/DEBIAN" "$d/usr/share/doc/$p"
  install -m 0644 packaging/copyright "$d/usr/share/doc/$p/copyright"
  gzip -9nc CHANGELOG.md >"$d/usr/share/doc/$p/changelog.gz"
  {
    printf 'rshm (%s) %s; urgency=medium\n\n' "$DEB_VERSION" "$DEB_SUITE"
    printf '  * rshm %s built for Debian %s (OpenPMIx %s).\n\n' "$UPSTREAM_VERSION" "$DEB_SUITE" \
      "$pmix_version"
    printf ' -- %s  %s\n' "$MAINTAINER" "$(date -R -u -d "@$SOURCE_DATE_EPOCH")"
  } | gzip -9n >"$d/usr/share/doc/$p/changelog.Debian.gz"
  chmod 0644 "$d/usr/share/doc/$p/changelog.Debian.gz" "$d/usr/share/doc/$p/changelog.gz"
}

# The shared-library dependencies of the ELF files given, as dpkg-shlibdeps computes them
# (it wants a debian/control of the source; a minimal one is made for it).
shlibdeps() {
  local dir=$work/shlibdeps
  mkdir -p "$dir/debian"
  printf 'Source: rshm\n\nPackage: rshm\nArchitecture: any\n' >"$dir/debian/control"
  local files=() f
  for f in "$@"; do files+=("$(readlink -f "$f")"); done
  (cd "$dir" && dpkg-shlibdeps -O "${files[@]}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

# Write DEBIAN/control (and md5sums), fix modes and times, build the .deb.
finish_pkg() {
  local p=$1 section=$2 depends=$3 description=$4 extra=${5:-}
  local d=$work/$p
  find "$d" -type d -exec chmod 0755 {} +
  local size
  size=$(du -sk --exclude=DEBIAN "$d" | cut -f1)
  {
    printf 'Package: %s\nSource: rshm\nVersion: %s\nArchitecture: %s\n' "$p" "$DEB_VERSION" "$ARCH"
    printf 'Maintainer: %s\nInstalled-Size: %s\n' "$MAINTAINER" "$size"
    [ -z "$depends" ] || printf 'Depends: %s\n' "$depends"
    [ -z "$extra" ] || printf '%s\n' "$extra"
    printf 'Section: %s\nPriority: optional\n' "$section"
    # The synopsis, then the extended description reflowed to lines of at most 80 columns.
    printf 'Description: %s\n' "${description%%$'\n'*}"
    if [ "$description" != "${description%%$'\n'*}" ]; then
      printf '%s\n' "${description#*$'\n'}" | sed 's/^ *//' | fmt -u -w 78 | sed 's/^/ /'
    fi
  } >"$d/DEBIAN/control"
  (cd "$d" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0r md5sum) >"$d/DEBIAN/md5sums"
  chmod 0644 "$d/DEBIAN/control" "$d/DEBIAN/md5sums"
  find "$d" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zxz --build "$d" "$OUT/${p}_${DEB_VERSION}_${ARCH}.deb" >/dev/null
}

strip_lib() { strip --remove-section=.comment --remove-section=.note --strip-unneeded "$1"; }

# --- the three C libraries, one package per soname
lib_pkgs=()
for lib in server client pmi2; do
  p=librshm-$lib
  [ "$lib" = pmi2 ] && p=$p-0 || p=${p}0
  lib_pkgs+=("$p")
  new_pkg "$p"
  d=$work/$p
  install -d "$d/usr/lib/$MA"
  install -m 0644 "$STAGE/lib/librshm_$lib.so" "$d/usr/lib/$MA/librshm_$lib.so.0"
  strip_lib "$d/usr/lib/$MA/librshm_$lib.so.0"
  printf 'librshm_%s 0 %s (>= %s)\n' "$lib" "$p" "$UPSTREAM_VERSION" >"$d/DEBIAN/shlibs"
  printf 'activate-noawait ldconfig\n' >"$d/DEBIAN/triggers"
  chmod 0644 "$d/DEBIAN/shlibs" "$d/DEBIAN/triggers"
  case $lib in
    server) what="server library: a PMIx server's job data and posted data in shared memory
 librshm_server.so.0: a PMIx server (resource manager daemon, launcher) registers jobs,
 resources, committed and fenced data, process sets and groups into an rshm store, and
 hands its clients the store's location at fork (rshm_server.h)." ;;
    client) what="client library: PMIx_Get answered from shared memory
 librshm_client.so.0: a PMIx client or MPI library answers PMIx_Get of job data and posted
 data by reading an rshm store mapped read-only, in the caller's thread (rshm_client.h)." ;;
    pmi2) what="PMI-2 library over PMIx, reads answered from shared memory
 librshm_pmi2.so.0: the PMI-2 API (pmi2.h) for PMI-2 programs and MPI libraries, over
 libpmix; the KVS after a fence, job and node attributes and the process mapping are read
 from the rshm store." ;;
  esac
  finish_pkg "$p" libs "$(shlibdeps "$d/usr/lib/$MA/librshm_$lib.so.0")" "rshm $what" \
    "Multi-Arch: same"
done

# --- the preloads (not linked against: a private directory, no soname)
p=rshm-preload
new_pkg $p
d=$work/$p
install -d "$d/usr/lib/$MA/rshm"
for so in librshm_client_preload.so librshm_server_preload.so; do
  install -m 0644 "$STAGE/lib/$so" "$d/usr/lib/$MA/rshm/$so"
  strip_lib "$d/usr/lib/$MA/rshm/$so"
done
# compat: old file name of the client preload, for one release (LD_PRELOAD lines written for it)
ln -sf librshm_client_preload.so "$d/usr/lib/$MA/rshm/librshm_preload.so" # compat: old file name
finish_pkg $p libs "$(shlibdeps "$d"/usr/lib/$MA/rshm/*.so)" "rshm preloads for unmodified OpenPMIx clients and servers
 LD_PRELOAD=/usr/lib/$MA/rshm/librshm_client_preload.so answers an unmodified OpenPMIx
 client's PMIx_Get from the rshm store its server announced (by libpmix otherwise);
 librshm_server_preload.so publishes an unmodified PMIx server's registrations into a store
 beside libpmix, whatever libpmix's version." "Multi-Arch: same"

# --- development files
p=librshm-dev
new_pkg $p
d=$work/$p
install -d "$d/usr/include/rshm" "$d/usr/lib/$MA/pkgconfig"
install -m 0644 server-shim/include/rshm_server.h client-shim/include/rshm_client.h \
  pmi2/include/pmi2.h "$d/usr/include/rshm/"
for lib in server client pmi2; do ln -s "librshm_$lib.so.0" "$d/usr/lib/$MA/librshm_$lib.so"; done
install -m 0644 "$STAGE/lib/librshm_server.a" "$d/usr/lib/$MA/librshm_server.a"
strip --strip-debug --remove-section=.comment "$d/usr/lib/$MA/librshm_server.a"
for pc in server-shim/rshm-server.pc.in client-shim/rshm-client.pc.in pmi2/rshm-pmi2.pc.in; do
  sed -e "s|@PREFIX@|/usr|" -e "s|@VERSION@|$UPSTREAM_VERSION|" \
    -e "s|^libdir=.*|libdir=\${prefix}/lib/$MA|" -e "s|^includedir=.*|includedir=\${prefix}/include/rshm|" \
    "$pc" >"$d/usr/lib/$MA/pkgconfig/$(basename "$pc" .in)"
  chmod 0644 "$d/usr/lib/$MA/pkgconfig/$(basename "$pc" .in)"
done
dev_deps=""
for lp in "${lib_pkgs[@]}"; do dev_deps+="$lp (= $DEB_VERSION), "; done
finish_pkg $p libdevel "${dev_deps}libpmix-dev" "rshm development files: C headers, pkg-config files, static server library
 rshm_server.h, rshm_client.h and pmi2.h (in /usr/include/rshm), the pkg-config files
 rshm-server, rshm-client and rshm-pmi2, the libraries' link-time symlinks and librshm_server.a.
 The headers use the PMIx standard's types from libpmix-dev's pmix_common.h." "Multi-Arch: same"

# --- the command line tool
p=rshm
new_pkg $p
d=$work/$p
install -d "$d/usr/bin" "$d/usr/share/man/man1"
install -m 0755 "$STAGE/bin/rshm" "$d/usr/bin/rshm"
strip --remove-section=.comment --remove-section=.note "$d/usr/bin/rshm"
gzip -9nc packaging/rshm.1 >"$d/usr/share/man/man1/rshm.1.gz"
chmod 0644 "$d/usr/share/man/man1/rshm.1.gz"
finish_pkg $p utils "$(shlibdeps "$d/usr/bin/rshm")" "inspect and clean up rshm shared-memory PMIx stores
 rshm dump and rshm get show what a running job's store holds; rshm sweep removes the stores
 of servers that were killed (for a node epilog)."

# --- the gds component, for exactly this OpenPMIx line
p=pmix-gds-rshm
if [ -f "$STAGE/component/pmix_mca_gds_rshm.so" ]; then
  new_pkg $p
  d=$work/$p
  install -d "$d$compdir" "$d/usr/share/doc/$p/examples"
  install -m 0644 "$STAGE/component/pmix_mca_gds_rshm.so" "$d$compdir/pmix_mca_gds_rshm.so"
  strip_lib "$d$compdir/pmix_mca_gds_rshm.so"
  install -m 0644 packaging/examples/pmix-mca-params.conf packaging/examples/slurm-mpi.conf \
    "$d/usr/share/doc/$p/examples/"
  # dpkg-shlibdeps' libpmix entry is replaced by the line's bounds: libpmix loads the component
  # of its own line only, and the package goes when libpmix moves to another line.
  deps=$(shlibdeps "$d$compdir/pmix_mca_gds_rshm.so" | tr ',' '\n' | sed 's/^ *//' |
    grep -v "^$pmix_pkg " | paste -sd, | sed 's/,/, /g')
  deps+=", $pmix_pkg (>= $pmix_version), $pmix_pkg (<< $pmix_next~)"
  finish_pkg $p libs "$deps" "rshm gds component for OpenPMIx $pmix_line
 pmix_mca_gds_rshm.so: rshm as a gds component of libpmix $pmix_line: a PMIx server (slurmstepd,
 mpirun, prted) publishes job data and modex data into a shared-memory store, and its clients
 answer PMIx_Get from it. Turned on by \"gds = rshm,hash\" in libpmix's parameter file or
 PMIX_MCA_gds=rshm,hash (examples in /usr/share/doc/$p/examples)." \
    "Recommends: rshm
Suggests: rshm-preload"
fi
ls "$OUT"
