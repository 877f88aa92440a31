#!/usr/bin/env bash
# Install rshm's C libraries: librshm_server.{so,a}, librshm_client.so, librshm_client_preload.so,
# librshm_pmi2.so, their headers and pkg-config files (rshm-server.pc, rshm-client.pc,
# rshm-pmi2.pc) under PREFIX (default /usr/local). PROFILE=debug installs a debug build. Then:
#   PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig cc app.c $(pkg-config --cflags --libs rshm-client)
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${1:-/usr/local}"
PROFILE="${PROFILE:-release}"
flag=(); [ "$PROFILE" = release ] && flag=(--release)
cargo build -q "${flag[@]}" -p rshm-server -p rshm-client -p rshm-client-preload -p rshm-pmi2 --lib
target="${CARGO_TARGET_DIR:-target}/$PROFILE"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
mkdir -p "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 0755 "$target/librshm_server.so" "$target/librshm_client.so" "$target/librshm_client_preload.so" \
  "$target/librshm_pmi2.so" "$PREFIX/lib/"
install -m 0644 "$target/librshm_server.a" "$PREFIX/lib/"
install -m 0644 server-shim/include/rshm_server.h client-shim/include/rshm_client.h \
  pmi2/include/pmi2.h "$PREFIX/include/"
for pc in server-shim/rshm-server.pc.in client-shim/rshm-client.pc.in pmi2/rshm-pmi2.pc.in; do
  out="$PREFIX/lib/pkgconfig/$(basename "$pc" .in)"
  sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$version|" "$pc" > "$out"
done
echo "installed rshm $version ($PROFILE) under $PREFIX"
