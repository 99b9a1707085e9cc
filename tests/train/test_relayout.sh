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
# start with one line on every rank.
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

# A layout of another size: refused before any step, one line, every rank non-zero.
GRIDTRAIN_TEST_RELAYOUT=5:2,2,1 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$work/bad" parallel.dp=2 \
  train.micro_batches=2 >"$work/bad.log" 2>&1 && fail "a re-layout to 4 ranks on 2 was accepted"
grep -q "^gridtrain: error: GRIDTRAIN_TEST_RELAYOUT: tp 2 x pp 2 x dp 1 is not the run's 2 ranks" "$work/bad.log" ||
  fail "no one-line error for a layout of another size: $(tail -3 "$work/bad.log")"
[ ! -s "$work/bad/metrics.jsonl" ] || fail "steps were trained before the refusal"
echo "ok: refused: $(grep -m1 '^gridtrain: error' "$work/bad.log")"
