#!/usr/bin/env bash
# The store's pure decoding code under valgrind's memcheck (stable Rust has no Miri and no
# sanitizers): forged and mutated segments (bytes, column blocks, table and root validation,
# rkyv value checks) and the C value conversions of malformed input. Fails on any invalid read,
# write or use of uninitialised memory. See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# Test binaries of (package, test target): built once, then run under memcheck.
targets=("rshm-gds corrupt" "rshm-gds fuzz" "rshm-gds format_checks" "rshm-abi malformed" "rshm-abi value_types")
exes=()
for t in "${targets[@]}"; do
  set -- $t
  exe=$(cargo test -q -p "$1" --test "$2" --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)
  [ -n "$exe" ] || { echo "valgrind: no test binary for $1 --test $2"; exit 1; }
  exes+=("$exe")
done
# The crate's own unit tests of the decoders (column blocks, node index, value bytes).
lib=$(cargo test -q -p rshm-gds --lib --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)

memcheck() {
  valgrind -q --error-exitcode=99 --leak-check=no --track-origins=no "$@"
}
for exe in "${exes[@]}"; do
  echo "valgrind: $(basename "$exe")"
  RSHM_FUZZ_CASES=${RSHM_FUZZ_CASES:-3000} memcheck "$exe" --test-threads=1 -q
done
echo "valgrind: gds unit tests of the decoders"
memcheck "$lib" --test-threads=1 -q column_blocks node_names bytes value
# topo's readers of store bytes: the relative-locality table (hostile bytes), the list form.
topo_lib=$(cargo test -q -p rshm-topo --lib --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)
echo "valgrind: topo unit tests of the table and list decoders"
memcheck "$topo_lib" --test-threads=1 -q table cpulist relative
