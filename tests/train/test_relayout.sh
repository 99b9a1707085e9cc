#!/usr/bin/env bash
# Live re-layout (docs/adaptive.md, "Live re-layout"), forced by the test hook GRIDTRAIN_TEST_RELAYOUT=s:t,p,d:
# after step 5 the run continues on another (tp, pp, dp) of the same 2 ranks, the state handed over in memory in
# global shapes. It must give the losses of a checkpoint-and-restart on the new layout (the run stopped after
# step 5 by train.max_steps_per_run and resumed with the new tp, pp, dp): bitwise, every step. Both continue from
# the same fp32 values (the handover and the checkpoint hold them in global shapes) on the same layout, so the
# same kernels sum in the same order; a value lost or misplaced in the handover (an AdamW moment, a TP slice)
# changes the next step's loss. The global batch is kept (micro-batches per replica x dp), so the steps before
# the switch are the same runs' too. Cases: dp 2 -> pp 2 (micro-batches 2 -> 4, a pipeline is built) and pp 2 ->
# tp 2 (a stage's blocks become every rank's TP slices). A hook naming a layout of other size is refused at the
# start with one line on every rank. A switch to a layout that does not fit in memory continues on the old one.
#   test_relayout.sh GRIDTRAIN MPIEXEC
common=(train --config tiny train.steps=10 output.log_every=1 output.peak_gflops=1 checkpoint.save_final=false
        parallel.allreduce=mpi)
TAG=relayout
source "$(dirname "$0")/../common/train_runs.sh"

# case NAME FROM-OVERRIDES -- TO-OVERRIDES: the live switch against stop-and-resume.
case_() {
  local name=$1 hook=$2; shift 2
  local from=() to=()
  while [ "$1" != -- ]; do from+=("$1"); shift; done; shift
  to=("$@")
  GRIDTRAIN_TEST_RELAYOUT=$hook run_np 2 "${name}_live" "${from[@]}"
  grep -q "^gridtrain: adapt: continuing at step 5 on blocks .* (tp ${hook:2:1} x pp ${hook:4:1} x dp ${hook:6:1}); the move took" \
    "$work/${name}_live.log" || fail "$name: no switch logged: $(grep 'adapt\|error' "$work/${name}_live.log" | head -3)"
  [ ! -e "$work/ck_${name}_live" ] || fail "$name: a checkpoint was written for the switch"
  run_short_np 2 5 "${name}_stop" "${from[@]}"
  run_np 2 "${name}_resume" checkpoint.dir="$work/ck_${name}_stop" checkpoint.resume=auto "${to[@]}"
  losses "${name}_live" >"$work/a.txt"
  { losses "${name}_stop"; losses "${name}_resume"; } >"$work/b.txt"
  [ "$(wc -l <"$work/a.txt")" = 10 ] || fail "$name: the live run has $(wc -l <"$work/a.txt") steps"
  cmp -s "$work/a.txt" "$work/b.txt" || fail "$name: losses differ from stop-and-resume: $(paste "$work/a.txt" "$work/b.txt" | head -10 | tr '\n' ';')"
  echo "ok: $name: 10 steps, switched after step 5, bitwise the losses of stop-and-resume on the new layout"
}
case_ dp2_pp2 5:1,2,1 parallel.dp=2 train.micro_batches=2 -- parallel.dp=1 parallel.pp=2 train.micro_batches=4
case_ pp2_tp2 5:2,1,1 parallel.pp=2 parallel.dp=1 train.micro_batches=4 -- parallel.pp=1 parallel.tp=2 parallel.dp=1 train.micro_batches=4

# A switch whose layout does not fit in memory falls back: pp 2 -> dp 2 after step 5 with MemAvailable (test hook)
# between what the memory check asks of pp 2 and of dp 2 (each probed from its own refusal, "N MiB for the 2
# rank(s) of this node"; dp 2 holds the whole model on each rank). The run continues on pp 2 from the state handed
# over and finishes: every loss bitwise equal to the same run with no switch (the same layout, the same values),
# the refusal logged, config.toml still pp 2.
need() {  # need OVERRIDES...: the MiB the memory check asks for this node's 2 ranks
  GRIDTRAIN_TEST_MEMAVAILABLE_MB=8 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$work/probe" "$@" 2>&1 |
    sed -n 's/.*this layout needs about .*: \([0-9]*\) MiB for the 2 rank(s) of this node.*/\1/p' | head -1
}
pp2=(parallel.pp=2 parallel.dp=1 train.micro_batches=4)
need_pp=$(need "${pp2[@]}") need_dp=$(need parallel.dp=2 train.micro_batches=2)
[[ -n $need_pp && -n $need_dp && $need_pp -lt $need_dp ]] || fail "memory probes: pp 2 needs '$need_pp' MiB, dp 2 '$need_dp'"
mid=$(( (need_pp + need_dp) / 2 ))
GRIDTRAIN_TEST_MEMAVAILABLE_MB=$mid GRIDTRAIN_TEST_RELAYOUT=5:1,1,2 run_np 2 refused "${pp2[@]}"
run_np 2 plain "${pp2[@]}"
grep -q "^gridtrain: adapt: the switch to tp 1 x pp 1 x dp 2, zero 0, micro-batch 8 cannot be made (memory: .*); continuing at step 5 on tp 1 x pp 2 x dp 1, zero 0, micro-batch 8 from the state handed over, nothing lost$" \
  "$work/refused.log" || fail "no fallback line: $(grep 'adapt\|error' "$work/refused.log" | head -3)"
losses refused >"$work/a.txt"; losses plain >"$work/b.txt"
[ "$(wc -l <"$work/a.txt")" = 10 ] || fail "the refused switch's run has $(wc -l <"$work/a.txt") steps"
cmp -s "$work/a.txt" "$work/b.txt" || fail "after the refused switch the losses differ from the run without one"
grep -q "^pp = 2" "$work/refused/config.toml" || fail "config.toml does not keep pp 2: $(grep '^pp\|^dp' "$work/refused/config.toml")"
echo "ok: a switch that does not fit (MemAvailable $mid MiB: pp 2 needs $need_pp, dp 2 $need_dp) stays on pp 2, 10 losses bitwise: $(grep -m1 'cannot be made' "$work/refused.log" | cut -c1-90)..."

# A layout of another size: refused before any step, one line, every rank non-zero.
GRIDTRAIN_TEST_RELAYOUT=5:2,2,1 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$work/bad" parallel.dp=2 \
  train.micro_batches=2 >"$work/bad.log" 2>&1 && fail "a re-layout to 4 ranks on 2 was accepted"
grep -q "^gridtrain: error: GRIDTRAIN_TEST_RELAYOUT: tp 2 x pp 2 x dp 1 is not the run's 2 ranks" "$work/bad.log" ||
  fail "no one-line error for a layout of another size: $(tail -3 "$work/bad.log")"
[ ! -s "$work/bad/metrics.jsonl" ] || fail "steps were trained before the refusal"
echo "ok: refused: $(grep -m1 '^gridtrain: error' "$work/bad.log")"
