#!/usr/bin/env bash
# Build rshm's Debian packages for one Debian release into target/debian/SUITE/ (docs/deploy.md,
# "Packages").
#
#   bash scripts/package.sh bookworm      Debian 12 (OpenPMIx 4.2.2): on a Debian 12 host, else in
#                                         its chroot (scripts/chroot.sh; root)
#   bash scripts/package.sh trixie        Debian 13 (OpenPMIx 5.0.7): in its chroot (root)
#   OUT=DIR bash scripts/package.sh SUITE the .debs into DIR instead
#   RSHM_PACKAGE_IN_CHROOT=1 ...          in the release's chroot even on a host of that release
#
# The Rust libraries and the rshm program are built here, once, for every release: they need
# nothing newer than Debian 12's glibc. The gds component is compiled against the release's own
# libpmix (on the host when it is that release, else inside its chroot) and its package depends
# on that OpenPMIx line only (>= the version built against, << the next minor). When the source
# tree has no component for the release's OpenPMIx line (component/Makefile's PMIX_LINE), the
# set is built without the component package, and this script says so.
#
# Packages: librshm-server0, librshm-client0, librshm-pmi2-0 (the C libraries), rshm-preload
# (librshm_client_preload.so, librshm_server_preload.so), librshm-dev (headers, pkg-config files,
# librshm_server.a), rshm (the command), pmix-gds-rshm (the component). Version
# UPSTREAM-1~debNN. RSHM_DEB_MAINTAINER sets the Maintainer field (default: the last commit's
# author).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

die() { echo "package.sh: $*" >&2; exit 2; }
suite=${1:-}
case "$suite" in
  bookworm) debnum=12 ;;
  trixie) debnum=13 ;;
  *) die "usage: bash scripts/package.sh bookworm|trixie" ;;
esac
host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
on_host=no
[ "$suite" = "$host_suite" ] && [ -z "${RSHM_PACKAGE_IN_CHROOT:-}" ] && on_host=yes
[ "$on_host" = yes ] || [ "$(id -u)" -eq 0 ] ||
  die "$suite is not this machine's release: its packages are built in a chroot, which needs root"

# Tools on the host: patchelf sets the libraries' sonames; dpkg-dev (dpkg-shlibdeps) assembles
# the packages when the host is the target release.
need=()
command -v patchelf >/dev/null || need+=(patchelf)
[ "$on_host" = no ] || command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "needs ${need[*]} (apt-get install ${need[*]})"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

target=${CARGO_TARGET_DIR:-$ROOT/target}
out=${OUT:-$target/debian/$suite}
stage=$target/debian/build/$suite
if [ "$on_host" = no ]; then
  case "$target" in "$ROOT"/*) ;; *)
    die "CARGO_TARGET_DIR must be inside the source tree (it is bound into the chroot)" ;;
  esac
fi
upstream=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
export UPSTREAM_VERSION=$upstream DEB_VERSION=$upstream-1~deb$debnum DEB_SUITE=$suite
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export MAINTAINER=${RSHM_DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null)}
[ -n "$MAINTAINER" ] || die "set RSHM_DEB_MAINTAINER (\"Name <address>\")"

echo "package.sh: $suite: rshm $DEB_VERSION"
cargo build --release -q -p rshm-server -p rshm-client -p rshm-client-preload -p rshm-server-preload \
  -p rshm-pmi2 -p rshm-cli -p rshm-component
rel=$target/release
rm -rf "$stage"
mkdir -p "$stage/lib" "$stage/bin" "$stage/component"
for lib in server client pmi2; do
  cp "$rel/librshm_$lib.so" "$stage/lib/"
  patchelf --set-soname "librshm_$lib.so.0" "$stage/lib/librshm_$lib.so"
done
# librshm_pmi2.so carries an rpath to libpmix's private directory (pmi2/build.rs); Debian's
# libpmix package links libpmix.so.2 into the default search path, so the packaged one needs none.
patchelf --remove-rpath "$stage/lib/librshm_pmi2.so"
cp "$rel/librshm_server.a" "$rel/librshm_client_preload.so" "$rel/librshm_server_preload.so" "$stage/lib/"
cp "$rel/rshm" "$stage/bin/"

inchroot() { bash scripts/chroot.sh run --bind-rw "$ROOT" "$suite" "$@"; }
[ "$on_host" = yes ] || bash scripts/chroot.sh build "$suite"

# The component, for the release's OpenPMIx line, if this source tree has an adapter for it.
if [ "$on_host" = yes ]; then
  pmix_version=$(pkg-config --modversion pmix)
else
  pmix_version=$(inchroot pkg-config --modversion pmix)
fi
line=$(sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p' <<<"$pmix_version")
if [ "$line" = 4.2 ] || grep -qF "(\$(PMIX_LINE),$line)" component/Makefile; then
  if [ "$on_host" = yes ]; then
    make -s -C component PMIX_LINE="$line" RSHM_A="$rel/librshm_component.a" \
      OUT="$stage/component-build" >/dev/null
  else
    inchroot make -s -C /rshm/component PMIX_LINE="$line" \
      RSHM_A="/rshm/${rel#"$ROOT"/}/librshm_component.a" \
      OUT="/rshm/${stage#"$ROOT"/}/component-build" >/dev/null
  fi
  cp "$stage/component-build/pmix_mca_gds_rshm.so" "$stage/component/"
  # libpmix's private directory, from pkg-config's link flags: the component is loaded by that
  # libpmix, into a process that has it already.
  patchelf --remove-rpath "$stage/component/pmix_mca_gds_rshm.so"
  echo "package.sh: $suite: gds component for OpenPMIx $line (libpmix $pmix_version)"
else
  echo "package.sh: $suite: NO gds component package: this source tree has no component for" \
    "OpenPMIx $line (component/Makefile, PMIX_LINE); the other packages are built"
fi

vars=(DEB_VERSION="$DEB_VERSION" UPSTREAM_VERSION="$UPSTREAM_VERSION" DEB_SUITE="$DEB_SUITE"
  SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" MAINTAINER="$MAINTAINER")
if [ "$on_host" = yes ]; then
  env "${vars[@]}" bash packaging/build-debs.sh "$stage" "$out" >/dev/null
else
  case "$out" in "$ROOT"/*) ;; *) die "OUT must be inside the source tree for $suite" ;; esac
  # dpkg-shlibdeps, in the throwaway overlay of this run only (the cached chroot stays as is).
  inchroot env "${vars[@]}" bash -c '
    set -e
    if ! command -v dpkg-shlibdeps >/dev/null; then
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
          --no-install-recommends dpkg-dev; } >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
    fi
    cd /rshm && bash packaging/build-debs.sh "$1" "$2" >/dev/null' _ \
    "/rshm/${stage#"$ROOT"/}" "/rshm/${out#"$ROOT"/}"
fi
for deb in "$out"/*.deb; do
  printf '  %-48s %6s KiB\n' "$(basename "$deb")" $(($(stat -c %s "$deb") / 1024))
done
