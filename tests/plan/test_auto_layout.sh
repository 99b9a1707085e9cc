#!/usr/bin/env bash
# parallel.layout = auto end to end (issue 12):
#   1 rank (cpu-2core description), 2 ranks (this machine measured at start), 4 ranks on a description with
#   0.9 of the memory one rank needs for the whole model: each run trains, its summary.json names
#   the choice and the runner-up, the layout it ran (tp, pp, dp) is the one the choice names, and the chosen
#   layout's predicted memory is within the description's usable memory. The 4-rank case must split the model
#   (tp or pp > 1): the whole model does not fit, so a plain dp4 choice would be wrong.
#   An impossible case (a description with 1 MB per device): one "gridtrain: error:" line on the whole job that
#   carries the planner's rejection reasons, non-zero exit, no summary.json.
#   test_auto_layout.sh GRIDTRAIN MPIEXEC SOURCE_DIR
set -u
bin=$1 mpiexec=$2 src=$3
TAG=auto source "$(dirname "$0")/../common/checks.sh"
common=(train --config tiny model.n_layer=4 model.d_model=64 model.n_head=4 model.seq_len=32 model.vocab_size=256
        train.micro_batch_size=4 train.micro_batches=4 train.steps=4 train.warmup_steps=1 output.log_every=1
        output.peak_gflops=1 checkpoint.save_final=false parallel.layout=auto)
run() {  # ranks name overrides... ; returns the exit code
  local n=$1 name=$2; shift 2
  if [ "$n" -gt 1 ]; then timeout 300 "$mpiexec" -n "$n" "$bin" "${common[@]}" output.dir="$work/$name" "$@" >"$work/$name.log" 2>&1
  else timeout 300 "$bin" "${common[@]}" output.dir="$work/$name" "$@" >"$work/$name.log" 2>&1; fi
}
# check NAME RANKS USABLE_GB MUST_SPLIT: the summary against the choice
check() {
  python3 - "$work/$1/summary.json" "$2" "$3" "$4" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1])); ranks = int(sys.argv[2]); usable = float(sys.argv[3]); split = sys.argv[4] == "1"
assert j["layout"] == "auto", j["layout"]
m = re.match(r"tp(\d+) pp(\d+) dp(\d+) .*: ([0-9.]+) ms/step, ([0-9.]+) GB", j["layout_choice"])
assert m, j["layout_choice"]
tp, pp, dp, ms, gb = int(m[1]), int(m[2]), int(m[3]), float(m[4]), float(m[5])
assert (j["tp"], j["pp"], j["dp"]) == (tp, pp, dp), ("ran", j["tp"], j["pp"], j["dp"], "chose", tp, pp, dp)
assert tp * pp * dp == ranks
assert usable <= 0 or gb <= usable, f"chosen layout needs {gb} GB > {usable}"
assert not split or tp * pp > 1, "the whole model does not fit one rank, yet the choice did not split it"
assert j["layout_runner_up"], "no runner-up field"
assert j["step"] == 4 and j["final_loss"] == j["final_loss"] and j["final_loss"] > 0, j
print(j["layout_choice"], "| runner-up:", j["layout_runner_up"])
PY
}

if run 1 r1 parallel.cluster=cpu-2core && out=$(check r1 1 12.7 0); then ok "1 rank: $out"
else fail "1 rank"; tail -5 "$work/r1.log"; fi
grep -q "layout auto on" "$work/r1.log" || fail "1 rank: no choice on the start line"

if run 2 r2 && out=$(check r2 2 0 0); then ok "2 ranks, measured: $out"
else fail "2 ranks, measured"; tail -5 "$work/r2.log"; fi
grep -q "layout auto on measured: 1 node(s) x 2 ranks" "$work/r2.log" || fail "2 ranks: the start line does not name the measured node"

# A device with 0.9 of what one rank needs for the whole model (the 1-rank choice's predicted memory; dp layouts
# need the same per rank) fits no dp4 layout; tp2 or pp2 halve the states and fit.
mem=$(python3 -c "import json,re; j=json.load(open('$work/r1/summary.json'))
print(f'{0.9 * float(re.search(r\"([0-9.]+) GB\", j[\"layout_choice\"])[1]):.6f}')")
sed -e "s/^memory_gb = .*/memory_gb = $mem/" -e "s/^memory_reserved_gb = .*/memory_reserved_gb = 0/" \
  "$src/inputs/clusters/cpu-2core.toml" >"$work/small.toml"
if run 4 r4 parallel.cluster="$work/small.toml" && out=$(check r4 4 "$mem" 1); then ok "4 ranks, $mem GB: $out"
else fail "4 ranks"; tail -5 "$work/r4.log"; fi

sed -e 's/^memory_gb = .*/memory_gb = 0.001/' -e 's/^memory_reserved_gb = .*/memory_reserved_gb = 0/' \
  "$src/inputs/clusters/cpu-2core.toml" >"$work/tiny_mem.toml"
run 2 none parallel.cluster="$work/tiny_mem.toml"; code=$?
errs=$(grep -c '^gridtrain: error: ' "$work/none.log")
if [ $code -ne 0 ] && [ "$errs" -eq 1 ] && grep '^gridtrain: error: ' "$work/none.log" |
     grep -q "no layout of 2 ranks fits.*rejected; closest: tp.*needs .* GB" && [ ! -e "$work/none/summary.json" ]; then
  ok "impossible: $(grep '^gridtrain: error: ' "$work/none.log")"
else fail "impossible (exit $code, $errs error lines)"; cat "$work/none.log"; fi

verdict
