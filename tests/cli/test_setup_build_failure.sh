#!/usr/bin/env bash
# scripts/setup.sh must fail when the build fails (CI runs the suite after it: a swallowed failure tested the
# previous binaries). Its build directory here is one that cmake cannot build (an empty CMakeCache.txt; the empty
# Makefile beside it keeps setup.sh from configuring afresh, which it does for a cache without build files), so
# the build step fails at once; setup must exit non-zero and say so. Before the fix it printed "setup: built" and
# exited 0 (the status of `cmake | grep || true` was lost). The package and BPE steps before the build are quiet
# no-ops on a machine where setup already ran, as it has wherever this test runs.
#   test_setup_build_failure.sh SOURCE_DIR
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_setup_XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/b" && : >"$work/b/CMakeCache.txt" && : >"$work/b/Makefile"
GRIDTRAIN_BUILD=$work/b timeout 120 "$1/scripts/setup.sh" >"$work/log" 2>&1
code=$?
[ $code -ne 0 ] || { echo "FAIL: setup.sh exited 0 on a failed build: $(tail -3 "$work/log")"; exit 1; }
grep -q "setup: build failed" "$work/log" || { echo "FAIL: no 'setup: build failed' line: $(tail -3 "$work/log")"; exit 1; }
! grep -q "setup: built" "$work/log" || { echo "FAIL: setup.sh said it built: $(tail -3 "$work/log")"; exit 1; }
echo "ok: setup.sh exit $code"
