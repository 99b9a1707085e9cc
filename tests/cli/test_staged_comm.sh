#!/usr/bin/env bash
# The host-staged backend (src/comm/comm_staged.hpp) end to end on the CPU build: GRIDTRAIN_TEST_DEVICE_MEMORY=cuda
# makes the trainer choose its communicator as a GPU build without a CUDA-aware MPI would, so the device groups run
# through staging copies (memcpy here, CUDA copies on a GPU build). The same algorithms then add the same numbers
# in the same order, so every layout's losses must equal the plain MPI run's bit for bit; the start line must say
# which path ran. Layouts: tp2 dp2 (TP all-reduces, DP buckets) and pp2 dp2 1F1B with 4 micro-batches (the grouped
# point-to-point exchanges of src/train/schedule.hpp, the embedding group).
#   test_staged_comm.sh GRIDTRAIN MPIEXEC
set -u
bin=$1 mpiexec=$2 TAG=staged
common=(train --config tiny train.steps=4 checkpoint.every=0 checkpoint.save_final=false)
. "$(dirname "$0")/../common/train_runs.sh"
for layout in "parallel.tp=2 parallel.dp=2" "parallel.pp=2 parallel.dp=2 train.micro_batches=4 parallel.schedule=1f1b"; do
  name=$(echo "$layout" | tr ' .=' '___')
  run_np 4 "plain_$name" $layout
  GRIDTRAIN_TEST_DEVICE_MEMORY=cuda run_np 4 "staged_$name" $layout
  grep -q "comm mpi-staged/" "$work/staged_$name.log" || fail "$layout: the start line does not say mpi-staged: $(head -1 "$work/staged_$name.log")"
  grep -q "comm mpi/" "$work/plain_$name.log" || fail "$layout: the plain run did not use mpi"
  [ "$(losses "plain_$name")" = "$(losses "staged_$name")" ] || fail "$layout: staged losses differ from plain MPI's:
$(paste <(losses "plain_$name") <(losses "staged_$name"))"
  [ "$(losses "staged_$name" | wc -l)" -eq 4 ] || fail "$layout: expected 4 steps"
  echo "ok   $layout: staged = plain over 4 steps ($(losses "staged_$name" | tail -1))"
done
