#!/usr/bin/env bash
# `gridtrain plan` end to end: a plan on every shipped cluster description (exit 0, a ranked table, valid
# JSON whose best layout fits in the description's memory), and bad input (one "gridtrain: error:" line naming
# the problem, non-zero exit, no output file left).
#   test_plan_cli.sh GRIDTRAIN SOURCE_DIR
set -u
bin=$1
src=$2
TAG=plan source "$(dirname "$0")/../common/checks.sh"

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
sed -i '/^\[node\]/a link_gbz = 3' "$work/badkey.toml"  # a repeated [node] would be refused as such
sed 's/^memory_gb = .*/memory_gb = 0.2/' "$src/inputs/clusters/cpu-2core.toml" >"$work/small_mem.toml"
grep -v '^peak_tflops_fp32' "$src/inputs/clusters/cpu-2core.toml" >"$work/nopeak.toml"
expect_error unknown_key "node.link_gbz" -- --config small --cluster "$work/badkey.toml" --devices 2 --global-batch 8
# the shared deck reader's rules hold for cluster files too (they once let a repeated key or section win)
cp "$src/inputs/clusters/cpu-2core.toml" "$work/dupsec.toml"; printf '[node]\nlink_gbs = 3\n' >>"$work/dupsec.toml"
expect_error dup_section "duplicate section \\[node\\]" -- --config small --cluster "$work/dupsec.toml" --devices 2 --global-batch 8
expect_error missing_key "peak_tflops_fp32" -- --config small --cluster "$work/nopeak.toml" --devices 2 --global-batch 8
expect_error unknown_cluster "unknown cluster 'dgx-z9'" -- --config small --cluster dgx-z9 --devices 2 --global-batch 8
expect_error nothing_fits "no layout of 2 devices fits" -- --config gpt2-124m --cluster "$work/small_mem.toml" --devices 2 --global-batch 8
expect_error batch_indivisible "--global-batch 8 is not divisible by any data-parallel degree the request allows \\(dp 3\\)" -- --config small --cluster cpu-2core --devices 3 --global-batch 8 --tp 1 --pp 1
expect_error no_devices "--devices" -- --config small --cluster cpu-2core --global-batch 8
expect_error bad_zero "--zero stages are 0-3" -- --config small --cluster cpu-2core --devices 2 --global-batch 8 --zero 4
expect_error bad_precision "unknown precision 'fp4'" -- --config small --cluster cpu-2core --devices 2 --global-batch 8 --precision fp4
expect_error fp8_no_peak "no layout of 2 devices fits.*fp8: the cluster description has no device.peak_tflops_fp8" -- --config small --cluster cpu-2core --devices 2 --global-batch 8 --precision fp8 --framework megatron-core-2024
# Llama shapes and the frameworks (issue 24): bad values named; what a framework lacks named as the rejection.
llama=(--config tiny model.arch=llama model.n_layer=4 model.d_model=256 model.n_head=8 model.n_kv_head=2 model.ffn_hidden=704 model.seq_len=512 model.vocab_size=1024)
expect_error bad_arch "model.arch expects gpt2 or llama, got 'llama3'" -- --config tiny model.arch=llama3 --cluster dgx-h100 --devices 8 --global-batch 8
expect_error kv_not_dividing "model.n_kv_head = 3 does not divide model.n_head = 8" -- "${llama[@]}" model.n_kv_head=3 --cluster dgx-h100 --devices 8 --global-batch 8 --framework megatron-core-2024
expect_error kv_zero "model.n_kv_head expects an integer from 1 to 16777216, got '0'" -- "${llama[@]}" model.n_kv_head=0 --cluster dgx-h100 --devices 8 --global-batch 8
expect_error bad_attention "model.attention expects fused, materialized or auto, got 'flash'" -- "${llama[@]}" model.attention=flash --cluster dgx-h100 --devices 8 --global-batch 8
expect_error gridtrain_llama_materialized "gridtrain's Llama blocks run only the fused attention" -- "${llama[@]}" model.attention=materialized --cluster dgx-h100 --devices 8 --global-batch 8
expect_error bad_framework "unknown framework 'megatron-core'" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --framework megatron-core
expect_error cp_seq "--cp 3 does not split model.seq_len = 512 into 2 x cp equal chunks" -- "${llama[@]}" --cluster dgx-h100 --devices 6 --global-batch 8 --cp 3 --framework megatron-core-2024
expect_error cp_devices "--cp 16 is more than the 8 devices" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --cp 16 --framework megatron-core-2024
expect_error vp_layers "--virtual-stages 8 is more than the 4 layers" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --virtual-stages 8 --framework megatron-core-2024
expect_error tp_overlap_value "--tp-overlap expects on or off, got 'yes'" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --tp-overlap yes
expect_error llmc_no_tp "no layout of 8 devices fits.*llm.c has no tensor or pipeline parallelism" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --tp 2 --framework llm.c
expect_error llmc_no_fp8 "no layout of 8 devices fits.*llm.c has no fp8 GEMMs" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --precision fp8 --framework llm.c
expect_error mcore_no_zero3 "megatron-core-2024 has no ZeRO stage 3" -- "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --zero 3 --framework megatron-core-2024
# tp above n_kv_head (4 > 2): gridtrain replicates each key/value head on tp / n_kv_head ranks, as Megatron does;
# tp neither dividing n_kv_head nor a multiple of it is refused by name
if "$bin" plan "${llama[@]}" --cluster dgx-h100 --devices 8 --global-batch 8 --tp 4 --framework gridtrain --json \
     >"$work/kvrep.json" 2>"$work/kvrep.err" &&
   python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['fits'][0]; assert b['layout']['tp']==4" "$work/kvrep.json"
then ok "llama with 2 key/value heads planned at tp 4 (replicated)"
else fail "llama at tp 4 > n_kv_head 2"; head -3 "$work/kvrep.err"; fi
expect_error kv_vs_tp "tp 6 neither divides the 4 key/value heads nor is a multiple of them" -- --config tiny model.arch=llama model.n_layer=4 model.d_model=384 model.n_head=12 model.n_kv_head=4 model.ffn_hidden=704 model.seq_len=512 model.vocab_size=1536 --cluster dgx-h100 --devices 6 --global-batch 6 --tp 6 --framework gridtrain
# every framework plans the Llama shape on a GPU cluster, with cp and interleaving where it has them
for fw in gridtrain megatron-core-2024 torchtitan-fsdp2 deepspeed-zero3 llm.c megatron; do
  extra=(); case $fw in megatron-core-2024|torchtitan-fsdp2) extra=(--cp 2) ;; esac
  if "$bin" plan "${llama[@]}" --cluster dgx-h100 --devices 16 --global-batch 16 --framework $fw "${extra[@]}" --precision bf16,fp8 --json >"$work/fw_$fw.json" 2>"$work/fw_$fw.err" &&
     python3 -c "import json,sys; j=json.load(open(sys.argv[1])); b=j['fits'][0]; assert b['memory_gb']['total'] <= j['usable_memory_gb']; assert j['model']['arch']=='llama' and j['model']['n_kv_head']==2" "$work/fw_$fw.json"
  then ok "llama shape planned with $fw: $(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['fits'][0]; print(b['layout'], round(b['time_ms']['step'],2), 'ms')" "$work/fw_$fw.json")"
  else fail "llama shape with $fw"; head -3 "$work/fw_$fw.err"; fi
done
expect_error bad_override "model.n_layr" -- --config small model.n_layr=3 --cluster cpu-2core --devices 2 --global-batch 8
# Bad numbers and degrees (issue 24): each named, with why; none crashes, wraps or is taken as "any".
base=(--config small --cluster cpu-2core)
expect_error devices_int_max "--devices 2147483647 is out of range \(1 to 1048576\)" -- "${base[@]}" --devices 2147483647 --global-batch 8
expect_error devices_64bit "--devices 99999999999 is out of range" -- "${base[@]}" --devices 99999999999 --global-batch 8
expect_error batch_64bit "--global-batch 99999999999 is out of range" -- "${base[@]}" --devices 8 --global-batch 99999999999
expect_error devices_text "--devices expects an integer, got '8x'" -- "${base[@]}" --devices 8x --global-batch 8
expect_error tp_more "--tp 16 is more than the 8 devices" -- "${base[@]}" --devices 8 --global-batch 8 --tp 16
expect_error tp_indivisible "--tp 5 does not divide the 8 devices" -- "${base[@]}" --devices 8 --global-batch 8 --tp 5
expect_error tp_pp_indivisible "--tp 4 x --pp 4 = 16 does not divide the 8 devices" -- "${base[@]}" --devices 8 --global-batch 8 --tp 4 --pp 4
expect_error pp_layers "--pp 8 is more than the model's 6 layers" -- "${base[@]}" --devices 8 --global-batch 8 --pp 8
expect_error tp_zero "--tp 0 is out of range \(1 to 1048576; leave it out for any degree\)" -- "${base[@]}" --devices 8 --global-batch 8 --tp 0
expect_error tp_negative "--tp -1 is out of range" -- "${base[@]}" --devices 8 --global-batch 8 --tp -1
expect_error pp_zero "--pp 0 is out of range" -- "${base[@]}" --devices 8 --global-batch 8 --pp 0
expect_error micro_zero "--micro-batch 0 is out of range" -- "${base[@]}" --devices 8 --global-batch 8 --micro-batch 0
expect_error micro_negative "--micro-batch -2 is out of range" -- "${base[@]}" --devices 8 --global-batch 8 --micro-batch -2
expect_error micro_none_divides "--micro-batch 3 divides none of the per-rank batches \(global batch 8 over the allowed dp gives 8, 4, 2, 1\)" -- "${base[@]}" --devices 8 --global-batch 8 --micro-batch 3
expect_error batch_no_dp "--global-batch 3 is not divisible by any data-parallel degree the request allows \(dp 2\)" -- "${base[@]}" --devices 8 --global-batch 3 --tp 2 --pp 2
expect_error top_zero "--top 0 is out of range" -- "${base[@]}" --devices 2 --global-batch 8 --top 0
expect_error seq_too_long "model.seq_len = 8388608 is beyond what the planner plans" -- "${base[@]}" model.seq_len=8388608 --devices 2 --global-batch 8
mkdir -p "$work/cluster_dir"
expect_error cluster_dir "cluster description '$work/cluster_dir' is a directory" -- --config small --cluster "$work/cluster_dir" --devices 2 --global-batch 8
: >"$work/empty.toml"
expect_error cluster_empty "no keys: not a cluster description" -- --config small --cluster "$work/empty.toml" --devices 2 --global-batch 8
sed 's/^peak_tflops_fp32 = .*/peak_tflops_fp32 = 1e300/' "$src/inputs/clusters/cpu-2core.toml" >"$work/huge_peak.toml"
expect_error cluster_huge "'device.peak_tflops_fp32' = .* is out of range \(0 to 1e9\)" -- --config small --cluster "$work/huge_peak.toml" --devices 2 --global-batch 8
sed 's/^devices = .*/devices = 1e12/' "$src/inputs/clusters/cpu-2core.toml" >"$work/huge_node.toml"
expect_error cluster_node_devices "'node.devices': must be an integer from 1 to 1000000" -- --config small --cluster "$work/huge_node.toml" --devices 2 --global-batch 8
sed 's/^memory_efficiency = .*/memory_efficiency = 0/' "$src/inputs/clusters/cpu-2core.toml" >"$work/zero_eff.toml"
expect_error cluster_zero_eff "'device.memory_efficiency' must lie in \(0, 1\]" -- --config small --cluster "$work/zero_eff.toml" --devices 2 --global-batch 8
expect_error plot_not_left "--tp 5 does not divide" -- "${base[@]}" --devices 8 --global-batch 8 --tp 5 --plot "$work/never.png"
[ ! -e "$work/never.png" ] && [ ! -e "$work/never.png.json" ] || fail "a plot left behind by a refused request"
expect_error calib_missing "summary.json" -- --calibrate "$work/nothing_here"
[ ! -e "$work/calib.toml" ] || fail "calibration output left behind"

verdict
