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
#   test_memory_check.sh GRIDTRAIN MPIEXEC CASE
set -u
bin=$1 mpiexec=$2 case=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_mem_XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
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
  *) fail "unknown case $case" ;;
esac
if [ "$gpu" = 1 ] && { [ "$case" = layers ] || [ "$case" = ulimit ]; }; then
  echo "skipped: $case checks host memory; a GPU build checks its device (case device)"; exit 77
fi
for n in 1 2; do
  d=$work/r$n
  # 120 s: the refusal comes before any allocation; the code before it ran for minutes (or until killed)
  if [ $n -gt 1 ]; then timeout -k 5 120 "$mpiexec" -n $n "$bin" "${common[@]}" "${args[@]}" output.dir="$d" >"$work/log" 2>&1
  else timeout -k 5 120 "$bin" "${common[@]}" "${args[@]}" output.dir="$d" >"$work/log" 2>&1; fi
  code=$?
  [ $code -eq 1 ] || fail "$n ranks: exit $code, expected 1: $(tail -3 "$work/log")"
  [ "$(grep -c '^gridtrain: error: ' "$work/log")" -eq 1 ] || fail "$n ranks: expected one error line: $(tail -5 "$work/log")"
  grep -q "^gridtrain: error: memory: this layout needs about [0-9.]* [GM]iB per rank (model state .*): .*$want; lower it with parallel.tp or parallel.pp .*parallel.zero .*train.micro_batch_size .*train.precision" \
    "$work/log" || fail "$n ranks: unclear error: $(grep error "$work/log")"
  ! grep -qi "internal error\|Kokkos failed" "$work/log" || fail "$n ranks: an allocation was tried"
  [ ! -s "$d/metrics.jsonl" ] || fail "$n ranks: trained before noticing"
done
echo "ok: $case: refused on 1 and 2 ranks before allocating"
