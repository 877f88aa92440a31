#!/usr/bin/env bash
# The server shim's commit path timed in one process, without and with a fork before each
# commit (component/bench/commit_fork.c): what the copy-on-write of a forking host's pages
# adds to a commit, and the page faults behind it.
#
#   bash component/bench/commit-fork.sh [N] [KS]      defaults: 512 "1 16"
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-512}; KS=${2:-"1 16"}
make -s -C component >/dev/null
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
cc -std=gnu11 -O2 -Wall -Wextra -Werror -Iserver-shim/include $(pkg-config --cflags pmix) \
  -o "$OUT/commit_fork" component/bench/commit_fork.c "$TARGET/release/librshm_component.a" \
  -lhwloc -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
echo "commit-fork: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $KS; do
  for fork in 0 1; do
    "$OUT/commit_fork" "$N" "$k" "$fork"
  done
done
