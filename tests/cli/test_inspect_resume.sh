#!/usr/bin/env bash
# `gridtrain inspect` and a resume reach the same verdict on every kind of checkpoint damage the checkpoint tests
# make (tests/io/checkpoint_damage.cpp --list: a missing or reshaped dataset, a flipped data byte, NaN/inf with a
# valid checksum, bad or missing root attributes, another model's signature, truncation, not HDF5, ...), and the
# verdict each kind must have: a file inspect passes is one a run restarted from it (its own configuration,
# checkpoint.resume=PATH) accepts, and the reverse. Before (issue 26) inspect said "problems: 0" and exit 0 for
# 10 of 40 damaged variants that resume refused.
#   test_inspect_resume.sh GRIDTRAIN CHECKPOINT_DAMAGE
set -u
bin=$1 damage=$2
TAG=inspect source "$(dirname "$0")/../common/scratch.sh"
model=(model.n_layer=2 model.d_model=32 model.n_head=4 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=2)
"$bin" train --config tiny "${model[@]}" output.dir="$work/a" train.steps=2 checkpoint.every=2 output.log_every=1000 \
  output.peak_gflops=1 >"$work/a.log" 2>&1 || fail "the run that writes the checkpoint: $(tail -3 "$work/a.log")"
pristine=$work/a/checkpoints/step_00000002.h5
# one kind: damage a copy, inspect it, resume from it; "<kind> <want> <inspect exit> <resume exit>" to $work/v_<kind>
one() {
  local kind=$1 want=$2 f=$work/c_$1.h5
  cp "$pristine" "$f"
  "$damage" "$f" "$kind" || { echo "$kind $want tool tool" >"$work/v_$kind"; return; }
  timeout -k 5 120 "$bin" inspect "$f" >"$work/i_$kind.log" 2>&1; local ri=$?
  timeout -k 5 120 "$bin" train --config tiny "${model[@]}" output.dir="$work/r_$kind" train.steps=2 \
    checkpoint.resume="$f" checkpoint.save_final=false output.log_every=1000 output.peak_gflops=1 >"$work/r_$kind.log" 2>&1
  echo "$kind $want $ri $?" >"$work/v_$kind"
}
n=0
while read -r kind want; do  # two at a time (CI has 2 cores; each run is mostly process start-up)
  [ $n -ge 2 ] && wait -n
  one "$kind" "$want" &
  n=$((n + 1))
done < <("$damage" --list)
wait
bad=0
for v in "$work"/v_*; do
  read -r kind want ri rr <"$v"
  [ $want = accept ] && expect=0 || expect=1
  if [ "$ri" != $expect ] || [ "$rr" != $expect ]; then
    echo "  $kind: inspect exit $ri, resume exit $rr, expected $expect for both"
    echo "    inspect: $(grep -m1 '^resume: \|error' "$work/i_$kind.log" | cut -c1-200)"
    echo "    resume:  $(grep -m1 'error\|resumed from' "$work/r_$kind.log" | cut -c1-200)"
    bad=$((bad + 1))
  elif [ $expect -eq 1 ]; then  # refused: with a reason (inspect) and one error line (resume)
    grep -q "^resume: refused: \|^gridtrain: error: " "$work/i_$kind.log" || { echo "  $kind: inspect gave no reason"; bad=$((bad + 1)); }
    [ "$(grep -c '^gridtrain: error: ' "$work/r_$kind.log")" -eq 1 ] || { echo "  $kind: resume: not one error line"; bad=$((bad + 1)); }
  fi
done
[ $n -ge 20 ] || fail "only $n damage kinds listed"
[ $bad -eq 0 ] || fail "$bad disagreements or wrong verdicts over $n kinds"
echo "ok: inspect and resume agree on $n kinds of damage (each with the expected verdict)"
