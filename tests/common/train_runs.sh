# Sourced by the training shell tests: the scratch folder and fail of scratch.sh, and runs of the trainer. Takes
# the test's own arguments GRIDTRAIN MPIEXEC as bin and mpiexec (sourced, it sees them as $1 $2), and set -u.
# Needs: common (array: the arguments every run shares), TAG (the scratch name).
set -u
bin=$1 mpiexec=$2
source "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"
# run_np NP NAME overrides...: a run that must succeed; its output in $work/NAME, its log in $work/NAME.log.
run_np() {
  local np=$1 name=$2; shift 2
  "$mpiexec" -n "$np" "$bin" "${common[@]}" output.dir="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name run failed: $(tail -3 "$work/$name.log")"
}
# run_short_np NP STEPS NAME overrides...: the first STEPS steps of the run (the same learning-rate schedule as
# the whole run), stopped as a time-limited job is (train.max_steps_per_run: exit 75, a checkpoint in
# $work/ck_NAME). For checks that compare step by step (bitwise, differs-from), which need no full run.
run_short_np() {
  local np=$1 steps=$2 name=$3; shift 3
  "$mpiexec" -n "$np" "$bin" "${common[@]}" output.dir="$work/$name" checkpoint.dir="$work/ck_$name" \
    train.max_steps_per_run="$steps" "$@" >"$work/$name.log" 2>&1
  [[ $? == 75 ]] || fail "$name did not stop after $steps steps: $(tail -3 "$work/$name.log")"
  # each step's loss is there (a differs-from check on an empty list would pass)
  [[ $(wc -l <"$work/$name/metrics.jsonl") == "$steps" ]] || fail "$name: not $steps steps in metrics.jsonl"
}
# run RANKS LOG args...: gridtrain with ${common[@]} and args on RANKS ranks, output in LOG; returns its exit code.
# A generous limit for a loaded 2-core machine (a hang fails instead of blocking CI); -k because one SIGTERM only
# asks gridtrain to stop at the next step.
run() {
  local n=$1 log=$2; shift 2
  if [ "$n" -gt 1 ]; then timeout -k 10 240 "$mpiexec" -n "$n" "$bin" "${common[@]}" "$@" >"$log" 2>&1
  else timeout -k 10 240 "$bin" "${common[@]}" "$@" >"$log" 2>&1; fi
}
# The per-step losses of a run, one per line, and its final loss (repr: every bit).
losses() { python3 -c 'import json,sys
for l in open(sys.argv[1]+"/metrics.jsonl"): print(repr(json.loads(l)["loss"]))' "$work/$1"; }
final() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]+"/summary.json"))["final_loss"]))' "$work/$1"; }
# bad_run NP WHAT KEY overrides...: must fail, with an error naming KEY.
bad_run() {
  local np=$1 what=$2 key=$3; shift 3
  "$mpiexec" -n "$np" "$bin" "${common[@]}" output.dir="$work/bad" "$@" >"$work/bad.log" 2>&1 && fail "$what was accepted"
  grep -q "$key" "$work/bad.log" || fail "the error for $what does not name $key: $(tail -2 "$work/bad.log")"
}
