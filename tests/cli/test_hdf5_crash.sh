#!/usr/bin/env bash
# libhdf5 1.10.8 crashes (SIGSEGV) or hangs on some damaged metadata (the fuzzer's inputs in
# tests/fuzz/hdf5_crashes/). gridtrain reads a file in a child process first (src/io/h5_probe.hpp), so:
#   resume   the two newest step_*.h5 are such files (`latest` names the one that crashes HDF5, the other hangs it):
#            resume=auto on 2 ranks skips both with a warning naming each and why, resumes from the older valid
#            checkpoint and exits 0 (before: the run hung in H5HG_read until killed; the time limit here fails it)
#   inspect  `gridtrain inspect` on each prints one error line and exits 1 (before: exit 139, and a hang)
#   explicit checkpoint.resume=PATH naming the crashing file: one error line, exit 1 (before: exit 139)
#   dataset  a token dataset (data.source=hdf5) that crashes HDF5: one error line, exit 1 on both ranks (before:
#            exit 139)
#   timeout  the time limit itself, whatever libhdf5 does: a probe child made to sleep (test hook
#            GRIDTRAIN_TEST_H5_PROBE_SLEEP_S) on a valid checkpoint (the fuzz seed) is killed after
#            5 x GRIDTRAIN_H5_PROBE_TIMEOUT_S (it uses no CPU) and inspect says so
#   test_hdf5_crash.sh GRIDTRAIN MPIEXEC FUZZ_DIR(tests/fuzz) CASE
set -u
bin=$1 mpiexec=$2 fuzz=$3 case=$4
crashes=$fuzz/hdf5_crashes
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_h5crash_XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(train --config tiny model.n_layer=2 model.d_model=32 model.n_head=4 model.seq_len=16 model.vocab_size=64
        train.micro_batch_size=2 output.log_every=1000 output.peak_gflops=1)
# The child is killed after this much CPU time (or 5x as long in all). A valid small file's walk takes
# ~0.1 s of CPU, most of it the program's start: 2 s keeps the hang case short with a wide margin (a valid file
# taken for a hung one would fail the test, not pass it).
export GRIDTRAIN_H5_PROBE_TIMEOUT_S=2
# -k: one SIGTERM only asks gridtrain to stop, which a rank stuck inside HDF5 never gets to
lim() { timeout -k 5 "$@"; }
d=$work/r ck=$work/r/checkpoints
first_run() {  # a valid checkpoint at step 2
  lim 120 "$bin" "${common[@]}" output.dir="$d" train.steps=2 checkpoint.every=2 >"$work/a.log" 2>&1 \
    || fail "first run: $(tail -3 "$work/a.log")"
  [ -f "$ck/step_00000002.h5" ] || fail "first run wrote no step 2"
}

case $case in
  resume)
    first_run
    cp "$crashes/dataset_global_heap_segv.h5" "$ck/step_00000004.h5"
    cp "$crashes/dataset_global_heap_hang.h5" "$ck/step_00000006.h5"
    echo step_00000004.h5 >"$ck/latest"
    lim 120 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$d" train.steps=3 checkpoint.resume=auto >"$work/b.log" 2>&1
    code=$?
    [ $code -eq 0 ] || fail "resume=auto exited $code: $(tail -5 "$work/b.log")"
    grep -q "skipping invalid checkpoint .*step_00000004.h5: HDF5 crashed reading it (SIGSEGV)" "$work/b.log" \
      || fail "no warning naming the crashing file: $(grep -m3 warning "$work/b.log")"
    grep -q "skipping invalid checkpoint .*step_00000006.h5: HDF5 did not finish reading it (hung: killed after" "$work/b.log" \
      || fail "no warning naming the hanging file: $(grep -m3 warning "$work/b.log")"
    grep -q "resumed from .*step_00000002.h5 at step 2" "$work/b.log" || fail "did not resume from step 2: $(tail -3 "$work/b.log")"
    # the damaged files are kept for a person to look at
    [ -f "$ck/step_00000004.h5" ] && [ -f "$ck/step_00000006.h5" ] || fail "a damaged checkpoint was deleted"
    ;;
  inspect)
    for f in segv:dataset_global_heap_segv "hung:dataset_global_heap_hang"; do
      lim 60 "$bin" inspect "$crashes/${f#*:}.h5" >"$work/i.log" 2>&1
      code=$?
      [ $code -eq 1 ] || fail "inspect ${f#*:}: exit $code (expected 1): $(tail -2 "$work/i.log")"
      [ "$(grep -c . "$work/i.log")" -eq 1 ] || fail "inspect ${f#*:}: not one line: $(head -5 "$work/i.log")"
      case ${f%%:*} in
        segv) grep -q "^gridtrain: error: .*: HDF5 crashed reading it (SIGSEGV): its metadata is damaged$" "$work/i.log" ;;
        hung) grep -q "^gridtrain: error: .*: HDF5 did not finish reading it (hung: killed after" "$work/i.log" ;;
      esac || fail "inspect ${f#*:}: $(cat "$work/i.log")"
    done
    ;;
  explicit)
    first_run
    cp "$crashes/dataset_global_heap_segv.h5" "$work/bad.h5"
    lim 120 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$d" train.steps=3 checkpoint.resume="$work/bad.h5" >"$work/b.log" 2>&1
    code=$?
    [ $code -eq 1 ] || fail "resume=PATH exited $code (expected 1): $(tail -5 "$work/b.log")"
    [ "$(grep -c '^gridtrain: error' "$work/b.log")" -eq 1 ] || fail "not one error line: $(cat "$work/b.log")"
    grep -q "^gridtrain: error: .*bad.h5: HDF5 crashed reading it (SIGSEGV)" "$work/b.log" || fail "$(cat "$work/b.log")"
    ;;
  dataset)
    cp "$crashes/dataset_global_heap_segv.h5" "$work/tokens.h5"
    lim 120 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$d" train.steps=2 data.source=hdf5 data.path="$work/tokens.h5" >"$work/b.log" 2>&1
    code=$?
    [ $code -eq 1 ] || fail "training on the dataset exited $code (expected 1): $(tail -5 "$work/b.log")"
    [ "$(grep -c '^gridtrain: error' "$work/b.log")" -eq 1 ] || fail "not one error line: $(cat "$work/b.log")"
    grep -q "^gridtrain: error: .*tokens.h5: HDF5 crashed reading it (SIGSEGV)" "$work/b.log" || fail "$(cat "$work/b.log")"
    ;;
  timeout)
    export GRIDTRAIN_H5_PROBE_TIMEOUT_S=1 GRIDTRAIN_TEST_H5_PROBE_SLEEP_S=600
    cp "$fuzz/corpus/checkpoint/seed.h5" "$work/valid.h5"
    lim 60 "$bin" inspect "$work/valid.h5" >"$work/i.log" 2>&1
    code=$?
    [ $code -eq 1 ] || fail "inspect with a sleeping probe: exit $code (expected 1): $(tail -3 "$work/i.log")"
    # a sleeping child uses no CPU: the limit that ends it is the total, 5 x 1 s
    grep -q "HDF5 did not finish reading it (hung: killed after [0-9.]* s;" "$work/i.log" || fail "$(cat "$work/i.log")"
    # the killed child is gone, not left sleeping
    ! pgrep -f "gridtrain-internal-h5-probe $work/valid.h5" >/dev/null || fail "a probe child was left running"
    ;;
  *) fail "unknown case $case" ;;
esac
echo "ok: $case"
