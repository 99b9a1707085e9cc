#!/usr/bin/env bash
# Reruns the faults of issue 14 that this branch fixed and prints one table row each: the faulty run's wall time
# (the fault is present from its start, or strikes at its second save), its exit code and what was kept.
#   scripts/fault_matrix.sh [GRIDTRAIN] [OUT.md]
#   FAULT_ROWS=new scripts/fault_matrix.sh ...   only the rows added 2026-12-04 (early stop, quote, HDF5 crashes)
set -u
bin=${1:-build/src/cli/gridtrain} out=${2:-runs/fault_matrix.md}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
w=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_faults_XXXXXX"); trap 'rm -rf "$w"' EXIT
mkdir -p "$(dirname "$out")"
c=(train --config tiny model.d_model=32 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=2
   output.log_every=1000 output.peak_gflops=1)
row() {  # name ranks kept-check -- args...
  local name=$1 n=$2 keep=$3; shift 4
  local t0=$(date +%s.%N)
  if [ "$n" -gt 1 ]; then timeout -k 5 300 mpiexec -n "$n" "$bin" "$@" >"$w/log" 2>&1; else timeout -k 5 300 "$bin" "$@" >"$w/log" 2>&1; fi
  local code=$? t1=$(date +%s.%N)
  local line=$(grep -m1 "^gridtrain: error" "$w/log" || grep -m1 "^gridtrain: warning" "$w/log")
  line=$(echo "$line" | sed "s|$w|W|g" | cut -c1-120)
  printf '| %s | %d | %.1f | %d | %s | %s |\n' "$name" "$n" "$(echo "$t1 - $t0" | bc)" $code "$(eval "$keep")" "${line//|/\\|}" | tee -a "$out"
}
echo "| fault | ranks | s to exit | exit | kept | first line |" | tee "$out"
echo "|---|---|---|---|---|---|" | tee -a "$out"
if [ "${FAULT_ROWS:-all}" != new ]; then
d=$w/r; "$bin" "${c[@]}" output.dir="$d" train.steps=4 checkpoint.every=2 >/dev/null 2>&1
echo garbage >"$d/checkpoints/latest"
row "garbage latest" 1 'ls $d/checkpoints | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=5 checkpoint.resume=auto
for f in "$d"/checkpoints/step_*.h5; do printf 'XXXX' | dd of="$f" bs=1 seek=2000 conv=notrunc 2>/dev/null; done
row "all checkpoints invalid (resume=auto)" 2 'ls $d/checkpoints | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=6 checkpoint.resume=auto
printf '[train]\nsteps = 2\nsteps = 3\n' >"$w/dup.toml"
row "duplicate key in deck" 2 'echo -' -- train --config "$w/dup.toml" output.dir="$w/x"
: >"$w/file"
row "checkpoint dir is a file" 2 'echo no metrics: $(test -s $w/y/metrics.jsonl && echo NO || echo yes)' -- "${c[@]}" output.dir="$w/y" checkpoint.dir="$w/file/c"
t0=$(date +%s.%N)
timeout -k 5 300 mpiexec -n 1 "$bin" "${c[@]}" output.dir="$w/m" : -n 1 "$bin" "${c[@]}" output.dir="$w/m" train.seed=9 >"$w/log" 2>&1; code=$?
printf '| ranks disagree (MPMD, train.seed) | 2 | %.1f | %d | - | %s |\n' "$(echo "$(date +%s.%N) - $t0" | bc)" $code "$(grep -m1 '^gridtrain: error' "$w/log" | cut -c1-110)" | tee -a "$out"
if unshare -m true 2>/dev/null; then
  for n in 1 2 4; do
    t0=$(date +%s.%N)
    unshare -m bash -c 'dir=$1; shift; mkdir -p "$dir/checkpoints" && mount -t tmpfs -o size=8m tmpfs "$dir/checkpoints" &&
      timeout -k 5 300 mpiexec -n "$@" >"$0/log" 2>&1; echo $? >"$0/code"; ls -A "$dir/checkpoints" | tr "\n" " " >"$0/kept"' \
      "$w" "$w/d$n" "$n" "$bin" train --config tiny train.steps=6 checkpoint.every=2 output.peak_gflops=1 output.log_every=1000 output.dir="$w/d$n"
    printf '| disk full at 2nd save (tmpfs 8 MiB) | %d | %.1f | %s | %s | %s |\n' $n "$(echo "$(date +%s.%N) - $t0" | bc)" "$(cat "$w/code")" "$(cat "$w/kept")" "$(grep -m1 '^gridtrain: error' "$w/log" | cut -c1-110)" | tee -a "$out"
  done
fi
# Bad steps (train.nonfinite), the memory pre-check and the watchdog (cases 3, 5, 6, 12)
for n in 1 2; do
  row "loss explodes (model.init_std=1e30)" $n 'ls $w/b$n/checkpoints | grep step_ | tr "\n" " "' -- "${c[@]}" output.dir="$w/b$n" model.init_std=1e30 train.steps=6 checkpoint.every=1
  export GRIDTRAIN_TEST_INF_RANK=$((n - 1)) GRIDTRAIN_TEST_INF_STEP=3 GRIDTRAIN_TEST_INF_NAN=1
  row "NaN gradient at step 3, nonfinite=stop" $n 'cat $w/s$n/checkpoints/latest' -- "${c[@]}" output.dir="$w/s$n" train.steps=6 checkpoint.every=2
  row "NaN gradient at step 3, nonfinite=skip" $n 'echo skipped $(grep -c bad_step $w/k$n/metrics.jsonl), final step $(tail -1 $w/k$n/metrics.jsonl | sed "s/.*\"step\": \([0-9]*\).*/\1/")' -- "${c[@]}" output.dir="$w/k$n" train.steps=6 train.nonfinite=skip
  export GRIDTRAIN_TEST_INF_STEP=5
  row "NaN gradient at step 5, nonfinite=rollback" $n 'grep -h "rolled back to" $w/log | head -1 | sed "s|.*/||" | cut -c1-40' -- "${c[@]}" output.dir="$w/rb$n" train.steps=8 checkpoint.every=2 train.nonfinite=rollback
  unset GRIDTRAIN_TEST_INF_RANK GRIDTRAIN_TEST_INF_STEP GRIDTRAIN_TEST_INF_NAN
  row "model cannot fit (train.micro_batch_size=200000)" $n 'echo no metrics: $(test -s $w/mb$n/metrics.jsonl && echo NO || echo yes)' -- "${c[@]}" output.dir="$w/mb$n" train.micro_batch_size=200000
done
( ulimit -v 1048576; row "model over ulimit -v 1 GiB (n_layer=300, tiny)" 1 'echo no metrics' -- train --config tiny model.n_layer=300 output.dir="$w/ul2" output.peak_gflops=1 )
# the watchdog: one rank of 2 SIGSTOPped once training runs; the time is from the SIGSTOP to the job's end
timeout -k 5 300 mpiexec -n 2 "$bin" "${c[@]}" output.dir="$w/wd" train.steps=100000000 train.watchdog_s=10 >"$w/log" 2>&1 &
job=$!
until [ -s "$w/wd/metrics.jsonl" ] && [ -s "$w/wd/heartbeat/rank_1" ]; do sleep 0.2; done
pid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$w/wd/heartbeat/rank_1")
t0=$(date +%s.%N); kill -STOP "$pid"; wait $job; code=$?
printf '| rank 1 of 2 SIGSTOPped (train.watchdog_s=10) | 2 | %.1f after the stop | %d | the last checkpoint (none here: no checkpoint.every) | %s |\n' "$(echo "$(date +%s.%N) - $t0" | bc)" $code "$(grep -m1 '^gridtrain: error' "$w/log" | sed "s|$w|W|g" | cut -c1-160)" | tee -a "$out"
kill -CONT "$pid" 2>/dev/null
fi

# Rows added 2026-12-04: a stop signal as soon as the process executes gridtrain (case 8), a double quote in a
# deck's string (found by fuzzing), and the libhdf5 crash/hang inputs of tests/fuzz/hdf5_crashes (src/io/h5_probe.*)
t0=$(date +%s.%N)
timeout -k 5 300 "$bin" "${c[@]}" output.dir="$w/es" train.steps=50 >"$w/log" 2>&1 &
job=$!
real=$(readlink -f "$bin") child=
until [ -n "$child" ] && case $(readlink "/proc/$child/exe") in "$real"*) true ;; *) false ;; esac; do child=$(pgrep -P $job); done
kill -TERM "$child"; wait $job; code=$?
printf '| SIGTERM as soon as the process executes gridtrain (0 ms) | 1 | %.1f | %d | %s | %s |\n' "$(echo "$(date +%s.%N) - $t0" | bc)" $code \
  "$(ls "$w/es/checkpoints" 2>/dev/null | grep -v lock | tr "\n" " ")" "$(grep -m1 '^gridtrain: stopped' "$w/log" | sed "s|$w|W|g" | cut -c1-110)" | tee -a "$out"
printf '[train]\nstop_file = "a"b"\n' >"$w/quote.toml"
row "double quote in a deck string" 1 'echo -' -- train --config "$w/quote.toml" output.dir="$w/q"
crash=$here/tests/fuzz/hdf5_crashes
d=$w/h; "$bin" "${c[@]}" output.dir="$d" train.steps=2 checkpoint.every=2 >/dev/null 2>&1
cp "$crash/dataset_global_heap_segv.h5" "$d/checkpoints/step_00000004.h5"; echo step_00000004.h5 >"$d/checkpoints/latest"
row "newest checkpoint crashes libhdf5 (SIGSEGV input), resume=auto" 2 'ls $d/checkpoints | grep -v lock | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=3 checkpoint.resume=auto
rm "$d/checkpoints/step_00000004.h5" "$d/checkpoints/step_00000003.h5"; cp "$crash/dataset_global_heap_hang.h5" "$d/checkpoints/step_00000006.h5"; echo step_00000006.h5 >"$d/checkpoints/latest"
GRIDTRAIN_H5_PROBE_TIMEOUT_S=5 row "newest checkpoint hangs libhdf5 (hang input), resume=auto, GRIDTRAIN_H5_PROBE_TIMEOUT_S=5" 2 'ls $d/checkpoints | grep -v lock | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=3 checkpoint.resume=auto
row "gridtrain inspect of the SIGSEGV input" 1 'echo -' -- inspect "$crash/dataset_global_heap_segv.h5"
row "token dataset crashes libhdf5 (SIGSEGV input)" 2 'echo no metrics: $(test -s $w/ds/metrics.jsonl && echo NO || echo yes)' -- "${c[@]}" output.dir="$w/ds" data.source=hdf5 data.path="$crash/dataset_global_heap_segv.h5"
