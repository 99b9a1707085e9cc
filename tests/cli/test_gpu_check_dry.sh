#!/usr/bin/env bash
# scripts/gpu_check.sh's logic without a GPU (CI): the dry run walks every stage, each says why it is skipped,
# nothing is run, at most 8 files come back (the device tool returns 8), summary.json lists every stage, and an
# unknown stage is a command-line error.
#   test_gpu_check_dry.sh SOURCE_DIR
set -u
src=$1
out=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_gpucheck_XXXXXX")
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
OUT=$out GRIDTRAIN_GPU_BUNDLE=$out/no-bundle GRIDTRAIN_GPU_BUILD=$out/no-build timeout 120 "$src/scripts/gpu_check.sh" --dry-run \
  >"$out.log" 2>&1 || fail "dry run exited $?: $(tail -5 "$out.log")"
cat "$out/summary.txt"
for s in build match bench kernels torch vision_own vision tests sanitize; do
  grep -qE "^$s skipped: .+" "$out/summary.txt" || fail "stage $s is not reported as skipped with a reason"
done
grep -q "^probe: gpu: " "$out/summary.txt" || fail "the probe did not report the GPU"
[ "$(find "$out" -type f | wc -l)" -le 8 ] || fail "more than 8 files: $(find "$out" -type f)"
[ "$(find "$out" -mindepth 3 | wc -l)" -eq 0 ] || fail "files deeper than 2 folders"
python3 - "$out/summary.json" <<'PY' || fail "summary.json"
import json, sys
s = json.load(open(sys.argv[1]))
names = [x["stage"] for x in s["stages"]]
assert s["dry_run"] is True, s
assert names == ["build", "match", "bench", "kernels", "torch", "vision_own", "vision", "tests", "sanitize"], names
assert all(x["rc"] == -1 and x["note"].startswith("skipped: ") for x in s["stages"]), s
PY
OUT=$out "$src/scripts/gpu_check.sh" --stages build,bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown stage was accepted"
rm -f "$out.log"
echo "ok: dry run reports every stage skipped with its reason"
