#!/usr/bin/env bash
# `gridtrain plan` end to end: a plan on every shipped cluster description (exit 0, a ranked table, valid
# JSON whose best layout fits in the description's memory), and bad input (one "gridtrain: error:" line naming
# the problem, non-zero exit, no output file left).
#   test_plan_cli.sh GRIDTRAIN SOURCE_DIR
set -u
bin=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_plan_XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

for c in cpu-2core a100-pcie a100-sxm dgx-h100 dgx-h200; do
  case $c in cpu-2core) deck=small n=2 gb=8 ;; *) deck=gpt2-124m n=16 gb=64 ;; esac
  if "$bin" plan --config $deck --cluster $c --devices $n --global-batch $gb >"$work/$c.txt" 2>"$work/$c.err" &&
     grep -q "layouts fit" "$work/$c.txt" &&
     "$bin" plan --config $deck --cluster $c --devices $n --global-batch $gb --json >"$work/$c.json" 2>>"$work/$c.err" &&
     python3 - "$work/$c.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
best = j["fits"][0]
assert best["memory_gb"]["total"] <= j["usable_memory_gb"] + 1e-9, best
assert best["layout"]["tp"] * best["layout"]["pp"] * best["layout"]["dp"] == j["devices"]
tps = [f["tokens_per_s"] for f in j["fits"]]
assert tps == sorted(tps, reverse=True), "not ranked by tokens/s"
assert all(r.get("reason") for r in j["rejected"]), "a rejected layout without a reason"
PY
  then ok "plan $deck on $c: $(sed -n 2p "$work/$c.txt")"
  else fail "plan $deck on $c"; head -5 "$work/$c.err" "$work/$c.txt"; fi
done

# the scaling plot (python3-matplotlib is in scripts/setup.sh)
if "$bin" plan --config gpt2-124m --cluster dgx-h100 --devices 16 --global-batch 64 --plot "$work/scale.png" \
     >"$work/plot.txt" 2>&1 && [ -s "$work/scale.png" ]; then ok "plot"; else fail "plot"; cat "$work/plot.txt"; fi

# expect_error NAME PATTERN -- ARGS...
expect_error() {
  local name=$1 pattern=$2
  shift 3
  "$bin" plan "$@" >"$work/$name.out" 2>"$work/$name.err"
  local code=$?
  if [ $code -ne 0 ] && [ "$(grep -c '^gridtrain: error: ' "$work/$name.err")" -eq 1 ] &&
     grep '^gridtrain: error: ' "$work/$name.err" | grep -qE -- "$pattern" && [ ! -s "$work/$name.out" ]; then
    ok "$name: $(grep '^gridtrain: error: ' "$work/$name.err")"
  else
    fail "$name (exit $code)"; head -5 "$work/$name.err" "$work/$name.out"
  fi
}
cp "$src/inputs/clusters/cpu-2core.toml" "$work/badkey.toml"
echo "[node]" >>"$work/badkey.toml"; echo "link_gbz = 3" >>"$work/badkey.toml"
sed 's/^memory_gb = .*/memory_gb = 0.2/' "$src/inputs/clusters/cpu-2core.toml" >"$work/small_mem.toml"
grep -v '^peak_tflops_fp32' "$src/inputs/clusters/cpu-2core.toml" >"$work/nopeak.toml"
expect_error unknown_key "node.link_gbz" -- --config small --cluster "$work/badkey.toml" --devices 2 --global-batch 8
expect_error missing_key "peak_tflops_fp32" -- --config small --cluster "$work/nopeak.toml" --devices 2 --global-batch 8
expect_error unknown_cluster "unknown cluster 'dgx-z9'" -- --config small --cluster dgx-z9 --devices 2 --global-batch 8
expect_error nothing_fits "no layout of 2 devices fits" -- --config gpt2-124m --cluster "$work/small_mem.toml" --devices 2 --global-batch 8
expect_error batch_indivisible "no layout of 3 devices fits.*not divisible|no layout of 3 devices" -- --config small --cluster cpu-2core --devices 3 --global-batch 8 --tp 1 --pp 1
expect_error no_devices "--devices" -- --config small --cluster cpu-2core --global-batch 8
expect_error bad_zero "--zero stages are 0-3" -- --config small --cluster cpu-2core --devices 2 --global-batch 8 --zero 4
expect_error bad_precision "unknown precision 'fp8'" -- --config small --cluster cpu-2core --devices 2 --global-batch 8 --precision fp8
expect_error bad_override "model.n_layr" -- --config small model.n_layr=3 --cluster cpu-2core --devices 2 --global-batch 8
expect_error calib_missing "summary.json" -- --calibrate "$work/nothing_here"
[ ! -e "$work/calib.toml" ] || fail "calibration output left behind"

echo "$failures failure(s)"
[ $failures -eq 0 ]
