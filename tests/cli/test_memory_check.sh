#!/usr/bin/env bash
# The memory pre-check (src/train/memory_check.*): a layout whose ledger cannot fit is one error line naming the
# predicted bytes and the keys to change, on 1 and 2 ranks, before anything is allocated or trained. Before it:
# n_layer=10000 failed after 16 s with "internal error: Kokkos failed to allocate", a large model under a 1 GiB
# `ulimit -v` ran for minutes without a line, a huge micro-batch failed mid-allocation with "internal error".
#   layers      model.n_layer=10000 with MemAvailable set to 4 GiB through the test hook (the machine's own free
#               memory would make the case depend on the machine)
#   ulimit      model.n_layer=300 (2.2 GiB) under `ulimit -v 1048576` (1 GiB)
#   microbatch  train.micro_batch_size=200000 (hundreds of GiB of activations)
#   device      the default tiny model against a device with 1 MiB free (GRIDTRAIN_TEST_DEVICE_FREE_MB: on a CUDA
#               build cudaMemGetInfo's figure, here the test hook), which is how GPU builds are checked
#   huge        model.n_layer=1000000 (about 3 TB of model state): refused by the closed-form floor before any
#               per-layer work (before: over 120 s at full CPU in the planner's partition, no line, SIGTERM ignored)
#   deep        model.n_layer=10000 of a narrow model fits and trains a step (start-up linear in the layers:
#               before, a quadratic name lookup kept it over 60 s in start-up)
#   stop        SIGTERM to both ranks of that deep model once its start line is out: honoured during start-up,
#               exit 75 with one line naming the phase, nothing trained, the lock gone (before: one step trained
#               first, or, in a spinning start-up, the signal was ignored)
#   test_memory_check.sh GRIDTRAIN MPIEXEC CASE
set -u
bin=$1 mpiexec=$2 case=$3
TAG=mem source "$(dirname "$0")/../common/scratch.sh"
common=(train --config tiny train.steps=2 output.peak_gflops=1)
# A GPU build checks device memory (cudaMemGetInfo), not MemAvailable or ulimit -v (CUDA maps a huge address space
# of its own): those two cases do not apply there (exit 77: skipped), the huge micro-batch meets the device's limit.
gpu=${GRIDTRAIN_GPU_BUILD:-0}
case $case in
  layers) export GRIDTRAIN_TEST_MEMAVAILABLE_MB=4096; args=(model.n_layer=10000); want="is available (MemAvailable)" ;;
  ulimit) ulimit -v 1048576; args=(model.n_layer=300); want="address-space limit (ulimit -v) is 1.0 GiB" ;;
  microbatch) args=(train.micro_batch_size=200000); want="is available (MemAvailable)"
              [ "$gpu" = 1 ] && want="free (cudaMemGetInfo)" ;;
  device) export GRIDTRAIN_TEST_DEVICE_FREE_MB=1; args=(); want="per rank but its device has 1 MiB free (cudaMemGetInfo)" ;;
  huge) args=(model.n_layer=1000000); want="is available (MemAvailable)" ;;
  deep|stop) ;;
  *) fail "unknown case $case" ;;
esac
if [ "$gpu" = 1 ] && { [ "$case" = layers ] || [ "$case" = ulimit ] || [ "$case" = huge ]; }; then
  echo "skipped: $case checks host memory; a GPU build checks its device (case device)"; exit 77
fi
narrow=(model.n_layer=10000 model.d_model=16 model.n_head=2 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=1
        checkpoint.save_final=false output.log_every=1000)
if [ $case = deep ]; then
  timeout -k 5 300 "$bin" "${common[@]}" train.steps=1 "${narrow[@]}" output.dir="$work/deep" >"$work/log" 2>&1 \
    || fail "n_layer=10000 (narrow): exit $?: $(tail -3 "$work/log")"
  grep -q "^step *1/1 " "$work/log" || fail "n_layer=10000: no step line"
  echo "ok: deep: n_layer=10000 (narrow) started and trained a step"
  exit 0
fi
if [ $case = stop ]; then
  d=$work/stop
  timeout -k 5 300 "$mpiexec" -n 2 "$bin" "${common[@]}" train.steps=1000 "${narrow[@]}" output.dir="$d" >"$work/log" 2>&1 &
  job=$!
  t=0
  until grep -q "^gridtrain: .* world 2 = " "$work/log" 2>/dev/null; do
    sleep 0.01; t=$((t + 1)); [ $t -lt 12000 ] || { kill -9 $job; fail "no start line in 120 s"; }
  done
  ranks=$(for p in $(pgrep -f "output.dir=$d\$"); do [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$bin")-bin" ] && echo $p; done)
  [ -n "$ranks" ] || { kill -9 $job; fail "rank processes not found"; }
  kill -TERM $ranks
  wait $job; code=$?
  [ $code -eq 75 ] || fail "SIGTERM during start-up: exit $code, expected 75: $(tail -3 "$work/log")"
  grep -q "^gridtrain: stopped on request (signal) during start-up, before " "$work/log" \
    || fail "SIGTERM during start-up: not honoured during start-up: $(grep -m2 'stopped\|error' "$work/log")"
  [ ! -s "$d/metrics.jsonl" ] || fail "SIGTERM during start-up: a step was trained first"
  [ ! -e "$d/checkpoints/lock" ] || fail "SIGTERM during start-up: the lock was left"
  echo "ok: stop: SIGTERM during the start-up of a 10000-layer model: exit 75 at $(grep -o 'before [a-z ]*' "$work/log" | head -1)"
  exit 0
fi
for n in 1 2; do
  d=$work/r$n
  # 120 s: the refusal comes before any allocation; the code before it ran for minutes (or until killed)
  if [ $n -gt 1 ]; then timeout -k 5 120 "$mpiexec" -n $n "$bin" "${common[@]}" "${args[@]}" output.dir="$d" >"$work/log" 2>&1
  else timeout -k 5 120 "$bin" "${common[@]}" "${args[@]}" output.dir="$d" >"$work/log" 2>&1; fi
  code=$?
  [ $code -eq 1 ] || fail "$n ranks: exit $code, expected 1: $(tail -3 "$work/log")"
  [ "$(grep -c '^gridtrain: error: ' "$work/log")" -eq 1 ] || fail "$n ranks: expected one error line: $(tail -5 "$work/log")"
  # the ledger's line, or the floor's when the model state alone cannot fit (checked first, in closed form)
  grep -qE "^gridtrain: error: memory: this (layout needs about [0-9.]* [GM]iB per rank \(model state .*\)|model's parameters, gradients and AdamW moments alone need at least [0-9.]* [GM]iB per rank \([0-9.e+]* parameters, 16 bytes each, over $n ranks\)): " "$work/log" &&
    grep -qF "$want; lower it with parallel.tp or parallel.pp" "$work/log" &&
    grep -q "^gridtrain: error: .*parallel.zero .*train.micro_batch_size .*train.precision" "$work/log" \
    || fail "$n ranks: unclear error: $(grep error "$work/log")"
  ! grep -qi "internal error\|Kokkos failed" "$work/log" || fail "$n ranks: an allocation was tried"
  [ ! -s "$d/metrics.jsonl" ] || fail "$n ranks: trained before noticing"
done
echo "ok: $case: refused on 1 and 2 ranks before allocating"
