#!/usr/bin/env bash
# The bad-step policy (train.nonfinite, src/train/step_guard.*) through the real command on 1 and 2 ranks (2: DP,
# the NaN injected on rank 1 only, carried to rank 0 by the gradient all-reduce). Each case failed before the
# policy existed (the keys were unknown, and a diverged loss trained on with exit 0).
#   bound     model.init_std=1e30 (the issue's case 12: step 1's loss is ln V, step 2's ~6e27) with the defaults:
#             exit 1 at step 2, one error line naming the loss and train.loss_bound, `latest` still step 1
#   stop      a NaN gradient at step 3 (test hook): exit 1 naming step 3 and the policy, `latest` still step 2
#   skip      the same NaN under skip: exit 0, step 3 logged and counted (metrics.jsonl, summary.json), and the
#             state after step 3 is bitwise the state after step 2 (h5diff of the two checkpoints: a skipped step
#             changes nothing); then init_std=1e30 under skip stops after train.nonfinite_max_consecutive bad
#             steps (steps 2-4: a step bad by its loss alone keeps its update, the loss comes after it)
#   rollback  the NaN at step 5 with checkpoints every 2: the run rolls back to step 4, goes on with the data
#             after step 5 (the repeated step 5 has another loss) and finishes at step 8 with exit 0; without a
#             checkpoint a rollback is a one-line error
#   spike     a finite gradient 1e4 times too large at step 9 (test hook): the z-score detector (window 5) and
#             train.gnorm_bound each call the step bad, where without them it is trained on
#   test_bad_steps.sh GRIDTRAIN MPIEXEC CASE
set -u
bin=$1 mpiexec=$2 case=$3
TAG=bad source "$(dirname "$0")/../common/train_runs.sh"  # $work, fail, run
common=(train --config tiny model.n_layer=2 model.d_model=32 model.n_head=4 model.seq_len=16 model.vocab_size=64
        train.micro_batch_size=2 output.log_every=1000 output.peak_gflops=1)
# nan_at RANKS STEP: the test hook of src/train/trainer.cpp puts a NaN into one gradient of the last rank
nan_at() { export GRIDTRAIN_TEST_INF_RANK=$(($1 - 1)) GRIDTRAIN_TEST_INF_STEP=$2 GRIDTRAIN_TEST_INF_NAN=1; }
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$1" "$2"; }

for n in 1 2; do
  d=$work/r$n
  case $case in
    bound)
      run $n "$work/b.log" output.dir="$d" model.init_std=1e30 train.steps=4 checkpoint.every=1; code=$?
      [ $code -eq 1 ] || fail "$n ranks: init_std=1e30 exited $code (0: trained on a diverged loss): $(tail -3 "$work/b.log")"
      [ "$(grep -c '^gridtrain: error: ' "$work/b.log")" -eq 1 ] || fail "$n ranks: expected one error line: $(cat "$work/b.log")"
      grep -q "^gridtrain: error: step 2: loss .* beyond train.loss_bound = 1000 (train.nonfinite = stop" "$work/b.log" \
        || fail "$n ranks: unclear error: $(grep error "$work/b.log")"
      [ "$(ls "$d/checkpoints" | grep step_)" = step_00000001.h5 ] || fail "$n ranks: a diverged state was saved" ;;
    stop)
      nan_at $n 3
      run $n "$work/s.log" output.dir="$d" train.steps=6 checkpoint.every=2 train.nonfinite=stop; code=$?
      [ $code -eq 1 ] || fail "$n ranks: exit $code: $(tail -3 "$work/s.log")"
      grep -q "^gridtrain: error: step 3: non-finite gradient norm (nan) (train.nonfinite = stop" "$work/s.log" \
        || fail "$n ranks: unclear error: $(grep error "$work/s.log")"
      [ "$(cat "$d/checkpoints/latest")" = step_00000002.h5 ] || fail "$n ranks: latest is not step 2"
      [ "$(ls "$d/checkpoints" | grep -c step_)" -eq 1 ] || fail "$n ranks: $(ls "$d/checkpoints")" ;;
    skip)
      nan_at $n 3
      run $n "$work/k.log" output.dir="$d" train.steps=4 checkpoint.every=1 checkpoint.keep=10 train.nonfinite=skip
      code=$?
      [ $code -eq 0 ] || fail "$n ranks: exit $code: $(tail -3 "$work/k.log")"
      grep -q "^gridtrain: warning: step 3: non-finite gradient norm (nan); update skipped (train.nonfinite = skip)" \
        "$work/k.log" || fail "$n ranks: the bad step was not logged: $(grep -i 'step 3' "$work/k.log")"
      [ "$(field "$d/summary.json" bad_steps.skipped)" = 1 ] || fail "$n ranks: summary: $(cat "$d/summary.json")"
      [ "$(field "$d/summary.json" skipped_steps)" = 1 ] || fail "$n ranks: skipped_steps not 1"
      grep '"step": 3' "$d/metrics.jsonl" | grep -q '"bad_step": "non-finite gradient norm (nan)"' \
        || fail "$n ranks: metrics.jsonl does not mark step 3"
      # a skipped step changes no parameter and no moment: step 3's checkpoint equals step 2's
      c=$d/checkpoints
      for g in params adam_m adam_v; do
        h5diff -q "$c/step_00000002.h5" "$c/step_00000003.h5" "/$g" "/$g" \
          || fail "$n ranks: /$g changed in the skipped step 3"
      done
      h5diff -q "$c/step_00000003.h5" "$c/step_00000004.h5" /params /params >/dev/null \
        && fail "$n ranks: step 4 did not update (the comparison above would be vacuous)"
      unset GRIDTRAIN_TEST_INF_RANK
      run $n "$work/k2.log" output.dir="$d.2" model.init_std=1e30 train.steps=10 train.nonfinite=skip \
        train.nonfinite_max_consecutive=3; code=$?
      [ $code -eq 1 ] || fail "$n ranks: diverged run under skip exited $code: $(tail -3 "$work/k2.log")"
      grep -q "^gridtrain: error: step 4: .*3 bad steps in a row (train.nonfinite_max_consecutive = 3)" "$work/k2.log" \
        || fail "$n ranks: unclear error: $(grep error "$work/k2.log")" ;;
    rollback)
      nan_at $n 5
      run $n "$work/r.log" output.dir="$d" train.steps=8 checkpoint.every=2 train.nonfinite=rollback; code=$?
      [ $code -eq 0 ] || fail "$n ranks: exit $code: $(tail -3 "$work/r.log")"
      grep -q "^gridtrain: rolled back to .*step_00000004.h5 (step 4)" "$work/r.log" || fail "$n ranks: no rollback line"
      grep -q "^gridtrain: warning: step 5: non-finite gradient norm (nan); rolled back to step 4" "$work/r.log" \
        || fail "$n ranks: the bad step was not logged"
      [ "$(field "$d/summary.json" bad_steps.rollbacks)" = 1 ] || fail "$n ranks: summary: $(cat "$d/summary.json")"
      [ "$(field "$d/summary.json" step)" = 8 ] || fail "$n ranks: did not finish at step 8"
      losses=$(grep '"step": 5,' "$d/metrics.jsonl" | python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["loss"]) for l in sys.stdin))')
      set -- $losses
      [ $# -eq 2 ] || fail "$n ranks: step 5 should appear twice in metrics.jsonl: $losses"
      [ "$1" != "$2" ] || fail "$n ranks: the repeated step 5 saw the same data ($1)"
      run $n "$work/r2.log" output.dir="$d.2" train.steps=8 train.nonfinite=rollback; code=$?
      [ $code -eq 1 ] || fail "$n ranks: rollback without a checkpoint exited $code"
      grep -q "^gridtrain: error: train.nonfinite = rollback: no checkpoint in .* to roll back to" "$work/r2.log" \
        || fail "$n ranks: unclear error: $(grep error "$work/r2.log")" ;;
    spike)
      export GRIDTRAIN_TEST_INF_RANK=$((n - 1)) GRIDTRAIN_TEST_INF_STEP=9 GRIDTRAIN_TEST_INF_VALUE=1e4
      # without a detector the step is trained on (clipping keeps it finite)
      run $n "$work/p0.log" output.dir="$d.0" train.steps=10 || fail "$n ranks: baseline failed: $(tail -3 "$work/p0.log")"
      [ "$(field "$d.0/summary.json" bad_steps.bad)" = 0 ] || fail "$n ranks: a bad step without a detector"
      run $n "$work/p.log" output.dir="$d" train.steps=10 train.nonfinite=skip train.spike_zscore=4 train.spike_window=5
      [ $? -eq 0 ] || fail "$n ranks: spike run failed: $(tail -3 "$work/p.log")"
      grep -q "^gridtrain: warning: step 9: gradient norm spike: .* standard deviations above the mean" "$work/p.log" \
        || fail "$n ranks: no spike found: $(grep -i warning "$work/p.log")"
      [ "$(field "$d/summary.json" bad_steps.spikes)" = 1 ] || fail "$n ranks: spikes not counted"
      run $n "$work/g.log" output.dir="$d.g" train.steps=10 train.nonfinite=stop train.gnorm_bound=100; code=$?
      [ $code -eq 1 ] || fail "$n ranks: gnorm_bound run exited $code"
      grep -q "^gridtrain: error: step 9: gradient norm .* beyond train.gnorm_bound = 100" "$work/g.log" \
        || fail "$n ranks: unclear error: $(grep error "$work/g.log")" ;;
    *) fail "unknown case $case" ;;
  esac
done
echo "ok: $case on 1 and 2 ranks"
