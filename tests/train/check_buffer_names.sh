#!/usr/bin/env bash
# Issue #20's rule: TrainState's buffers are chosen by typed id (src/train/state_buffers.hpp); their names, on
# disk and in memory, are written only in the table (src/train/state_buffers.cpp). Fails when one of the table's
# names appears as a string literal ("grads", or a dataset path "params/...") in code elsewhere in src/ or
# kernels/. Comments are stripped first (they may name a buffer); a name built at run time is not seen.
#   check_buffer_names.sh SOURCE_DIR
cd "$1" || exit 2
table=src/train/state_buffers.cpp
# Every quoted word on the table's rows: the names and the names on disk.
names=$(grep -E '^ *\{Buffer::' "$table" | grep -oE '"[a-z0-9_]+"' | tr -d '"' | sort -u)
[ -n "$names" ] || { echo "no buffer names found in $table"; exit 2; }
pattern="\"($(echo $names | tr ' ' '|'))[\"/]"
# The one allowed use: the run report's field "params" is the parameter count, not a buffer.
hits=$(grep -rnE "$pattern" src kernels --include=*.cpp --include=*.hpp | grep -v "^$table:" | sed -E 's#//.*##' |
  grep -E "$pattern" | grep -vE '^src/train/report/run_report\.cpp:[0-9]+:.*\.integer\("params", n_params_\)')
[ -z "$hits" ] || { echo "buffer names written outside $table (choose the buffer by its gt::Buffer id):"; echo "$hits"; exit 1; }
echo "ok: $(echo $names | wc -w) buffer names, written only in $table"
