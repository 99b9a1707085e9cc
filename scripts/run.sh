#!/usr/bin/env bash
# The main job on a fresh Debian machine: set-up (packages, build), prepare the embedded default corpus (the
# licence texts in /usr/share/common-licenses, present on every Debian system, byte-level tokens) on first
# use, then a short training run of the `tiny` preset on one rank, printing one line per step.
#   scripts/run.sh [section.key=value ...]      e.g. scripts/run.sh train.steps=300
#   RANKS=2 scripts/run.sh parallel.dp=2        the same under mpiexec
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GRIDTRAIN_BUILD:-$here/build}
"$here/scripts/setup.sh"
bin="$build/src/cli/gridtrain"
data="$here/data/common-licenses.h5"
if [ ! -f "$data" ]; then
  mkdir -p "$here/data"
  "$bin" prepare --tokenizer byte --out "$data" /usr/share/common-licenses
fi
cd "$here"
if [ "${RANKS:-1}" -gt 1 ]; then
  exec mpiexec -n "$RANKS" "$bin" train --config tiny data.source=hdf5 data.path="$data" data.val_every=25 "$@"
fi
exec "$bin" train --config tiny data.source=hdf5 data.path="$data" data.val_every=25 "$@"
