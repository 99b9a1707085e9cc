#!/usr/bin/env bash
# Restarts through the real command (issue #4):
#   bitwise   steps 1..20 in one run == 1..10, stop, resume 11..20 (losses and final parameters bit for bit),
#             on one rank and on tp=2 pp=2 dp=2; bitwise_llama: the Llama blocks on tp=2
#   cross_model  a llama checkpoint refused by a gpt2 run and the other way round, one line naming both models
#   bitwise_scaler  the same with the dynamic loss scaler (growth window 3) and an inf injected into one
#             gradient at step 7 (skipped): losses, scales and skips per step, and the final state bit for bit
#   bitwise_bf16, bitwise_fp16  bitwise in bf16 (dp=2 ZeRO-1) and in fp16 with the scaler and a skip
#   cross_precision  an fp32 checkpoint resumed in bf16 and a bf16 one in fp32: losses near the fp32 run
#   reshard   saved at tp=2 dp=2, resumed at tp=1 pp=2 dp=2 and at one rank: losses within fp32 tolerance
#   reshard_sp  a Llama run saved at tp=2 with sequence parallelism, resumed without it and at one rank: same bound
#   reshard_llama  the Llama blocks at tp=4 > n_kv_head=2 (each key/value head replicated on 2 ranks): bit for
#             bit across a stop at step 3; resumed at tp=2 and at one rank, and a tp=2 checkpoint at tp=4:
#             losses within the reshard case's 1e-5 (ZeRO-1 at tp=4 dp=2, its checkpoint too: test_zero)
#   sigkill   killed inside the step-20 checkpoint write: resume picks step 10 and finishes bit for bit
#   corrupt   newest checkpoint with flipped bytes under resume=auto: reported, the previous one used
#   stop      stop requests: a stop file (one rank, and on two ranks where only rank 0 looks), SIGUSR1 during
#             start-up, a request carried across the BLAS re-exec: each stops with a checkpoint and exit 75
#   test_restart.sh GRIDTRAIN MPIEXEC CASE
set -u
bin=$1 mpiexec=$2 case=$3
TAG=restart source "$(dirname "$0")/../common/scratch.sh"
common=(train --config tiny model.n_layer=4 model.d_model=32 model.n_head=4 model.seq_len=16 model.vocab_size=64
        train.micro_batch_size=4 train.micro_batches=4 train.steps=20 train.warmup_steps=2 output.log_every=1000
        output.peak_gflops=1)
run() {  # ranks dir overrides... ; returns the exit code
  local n=$1 dir=$2; shift 2
  if [ "$n" -gt 1 ]; then timeout 300 "$mpiexec" -n "$n" "$bin" "${common[@]}" output.dir="$dir" "$@" >>"$dir.log" 2>&1
  else timeout 300 "$bin" "${common[@]}" output.dir="$dir" "$@" >>"$dir.log" 2>&1; fi
}
# losses DIR -> "step loss scale skipped" lines from metrics.jsonl (exact decimal round-trip of the doubles)
losses() { python3 -c 'import json,sys
for l in open(sys.argv[1]+"/metrics.jsonl"): r=json.loads(l); print(r["step"], repr(r["loss"]), r.get("loss_scale"), r.get("skipped"))' "$1"; }
close() { python3 -c 'import sys
a=dict(l.split()[:2] for l in open(sys.argv[1])); b=dict(l.split()[:2] for l in open(sys.argv[2]))
bad=[k for k in b if k not in a or abs(float(a[k])-float(b[k]))>float(sys.argv[3])*abs(float(a[k]))]
print("steps compared:", len(b), "worst rel:", max(abs(float(a[k])-float(b[k]))/abs(float(a[k])) for k in b if k in a) if b else 0)
sys.exit(1 if bad or not b else 0)' "$1" "$2" "$3"; }
final_ckpt() { ls "$1"/checkpoints/step_*.h5 | sort | tail -1; }
# the tiny model as Llama blocks (model.arch = llama): 4 heads on 2 key/value heads, SwiGLU 88 wide
llama=(model.arch=llama model.n_kv_head=2 model.ffn_hidden=88)
# resume_to NAME RANKS CHECKPOINT STEPS overrides...: the run NAME resumes CHECKPOINT on RANKS ranks and must
# succeed; its STEPS losses (in $work/NAME.l) within 1e-5 of the uninterrupted run's ($work/a): fp32, where the
# TP sums and a changed layout only reorder additions.
resume_to() {
  local name=$1 n=$2 from=$3 steps=$4; shift 4
  run "$n" "$work/$name" "$@" checkpoint.resume="$from" || fail "$name ($*) failed: $(tail -3 "$work/$name.log")"
  losses "$work/$name" >"$work/$name.l"
  [ "$(wc -l <"$work/$name.l")" -eq "$steps" ] || fail "$name: expected $steps resumed steps"
  close "$work/a" "$work/$name.l" 1e-5 || fail "$name ($*): losses not within 1e-5 of the uninterrupted run"
  echo "ok: $name ($*)"
}

bitwise() {  # ranks layout...
  local n=$1; shift
  run "$n" "$work/full" "$@" || fail "uninterrupted run failed: $(tail -3 "$work/full.log")"
  run "$n" "$work/part" "$@" train.max_steps_per_run=10; code=$?
  [ $code -eq 75 ] || fail "first half exited $code, expected 75: $(tail -3 "$work/part.log")"
  [ -f "$work/part/checkpoints/step_00000010.h5" ] || fail "no step-10 checkpoint"
  grep -q '"status": "preempted"' "$work/part/summary.json" || fail "summary of the first half is not 'preempted'"
  run "$n" "$work/part" "$@" checkpoint.resume=auto || fail "resume failed: $(tail -3 "$work/part.log")"
  grep -q "resumed from .*step_00000010.h5" "$work/part.log" || fail "did not resume from step 10"
  losses "$work/full" >"$work/a"; losses "$work/part" >"$work/b"
  [ "$(wc -l <"$work/b")" -eq 20 ] || fail "resumed run has $(wc -l <"$work/b") metric lines, expected 20"
  cmp -s "$work/a" "$work/b" || { diff "$work/a" "$work/b" | head; fail "loss sequences differ"; }
  h5diff -d 0 "$(final_ckpt "$work/full")" "$(final_ckpt "$work/part")" /params >/dev/null \
    || fail "final parameters differ (h5diff)"
  h5diff -d 0 "$(final_ckpt "$work/full")" "$(final_ckpt "$work/part")" /adam_v >/dev/null \
    || fail "final optimizer state differs (h5diff)"
  echo "ok: 20 losses and the final parameters and optimizer state identical bit for bit ($n ranks $*)"
}

case $case in
  bitwise1) bitwise 1 ;;
  bitwise8) bitwise 8 parallel.tp=2 parallel.pp=2 parallel.dp=2 ;;
  bitwise_llama) bitwise 2 parallel.tp=2 "${llama[@]}" ;;  # the grouped qkv weight saved and loaded in kv-head shards
  reshard_llama)
    # 6 steps, stopped after 3 (4-8 ranks share the 2 CI cores: each step costs seconds). The global batch
    # (micro_batch_size 4 x micro_batches 4) is the same on every layout: dp=2 takes 2 micro-batches.
    short=(train.steps=6 train.warmup_steps=1 "${llama[@]}")
    ck=checkpoints/step_00000003.h5
    run 4 "$work/full" parallel.tp=4 "${short[@]}" || fail "uninterrupted tp=4 run failed: $(tail -3 "$work/full.log")"
    run 4 "$work/part" parallel.tp=4 "${short[@]}" train.max_steps_per_run=3; [ $? -eq 75 ] || fail "tp=4 first half"
    run 4 "$work/part" parallel.tp=4 "${short[@]}" checkpoint.resume=auto || fail "tp=4 resume failed: $(tail -3 "$work/part.log")"
    losses "$work/full" >"$work/a"; losses "$work/part" >"$work/b"
    cmp -s "$work/a" "$work/b" || { diff "$work/a" "$work/b" | head; fail "tp=4 resumed losses differ"; }
    h5diff -d 0 "$(final_ckpt "$work/full")" "$(final_ckpt "$work/part")" /params >/dev/null || fail "tp=4 final parameters differ"
    h5diff -d 0 "$(final_ckpt "$work/full")" "$(final_ckpt "$work/part")" /adam_v >/dev/null || fail "tp=4 final adam_v differs"
    echo "ok: tp=4 (each key/value head on 2 ranks) resumed bit for bit"
    # resharded: the tp=4 checkpoint at tp=2 and one rank; a tp=2 one at tp=4
    resume_to tp4_to_tp2 2 "$work/part/$ck" 3 parallel.tp=2 "${short[@]}"
    resume_to tp4_to_one 1 "$work/part/$ck" 3 parallel.tp=1 "${short[@]}"
    run 2 "$work/src2" parallel.tp=2 "${short[@]}" train.max_steps_per_run=3; [ $? -eq 75 ] || fail "tp=2 first half"
    resume_to tp2_to_tp4 4 "$work/src2/$ck" 3 parallel.tp=4 "${short[@]}" ;;  # ZeRO-1 at tp=4 dp=2: test_zero_tp4_..._llama
  cross_model)  # a llama checkpoint given to a gpt2 run of the same size, and a gpt2 one to a llama run
    run 1 "$work/l" "${llama[@]}" train.steps=2 || fail "llama run failed: $(tail -3 "$work/l.log")"
    run 1 "$work/g" train.steps=2 || fail "gpt2 run failed: $(tail -3 "$work/g.log")"
    lck=$(final_ckpt "$work/l") gck=$(final_ckpt "$work/g")
    before=$(md5sum "$lck" "$gck")
    run 1 "$work/g2" checkpoint.resume="$lck"; code=$?
    [ $code -ne 0 ] || fail "a gpt2 run resumed a llama checkpoint"
    [ "$(grep -c '^gridtrain: error: ' "$work/g2.log")" -eq 1 ] || fail "expected one error line: $(cat "$work/g2.log")"
    grep -q "^gridtrain: error: .*checkpoint of another model (llama n_layer=4 .*n_kv_head=2 ffn_hidden=88.*), this run is gpt2 n_layer=4" \
      "$work/g2.log" || fail "the error does not name both models: $(grep error "$work/g2.log")"
    run 1 "$work/l2" "${llama[@]}" checkpoint.resume="$gck"; code=$?
    [ $code -ne 0 ] || fail "a llama run resumed a gpt2 checkpoint"
    grep -q "^gridtrain: error: .*checkpoint of another model (gpt2 n_layer=4 .*), this run is llama n_layer=4" \
      "$work/l2.log" || fail "the error does not name both models: $(grep error "$work/l2.log")"
    [ ! -e "$work/g2/summary.json" ] && [ ! -e "$work/l2/summary.json" ] || fail "a refused run wrote summary.json"
    [ "$before" = "$(md5sum "$lck" "$gck")" ] || fail "a refused resume changed the checkpoint it was given"
    echo "ok: each model kind refuses the other's checkpoint with one line naming both" ;;
  bitwise_scaler)
    export GRIDTRAIN_TEST_INF_RANK=0 GRIDTRAIN_TEST_INF_STEP=7
    bitwise 1 train.loss_scale=dynamic train.loss_scale_initial=1024 train.loss_scale_window=3 \
      train.loss_scale_hysteresis=1
    grep -q '"skipped_steps": 1' "$work/part/summary.json" || fail "the resumed run's summary does not count the skip"
    [ "$(grep -c '"skipped": 1' "$work/part/metrics.jsonl")" -eq 1 ] || fail "not exactly one skipped step logged" ;;
  bitwise_bf16)  # bf16 on dp=2 with ZeRO-1: the sharded fp32 master, its checkpoint, and the working copy that the
    # resume rounds from each rank's shard and all-gathers (2 ranks: tp=2 dp=2 took 2 minutes on a loaded CI box;
    # TP does not touch what a resume restores)
    bitwise 2 train.precision=bf16 parallel.dp=2 parallel.zero=1 ;;
  bitwise_fp16)  # fp16 with the dynamic scaler (its default there), a skipped overflow step at 7
    export GRIDTRAIN_TEST_INF_RANK=0 GRIDTRAIN_TEST_INF_STEP=7
    bitwise 1 train.precision=fp16 train.loss_scale_initial=1024 train.loss_scale_window=3 \
      train.loss_scale_hysteresis=1
    grep -q '"skipped_steps": 1' "$work/part/summary.json" || fail "the resumed run's summary does not count the skip" ;;
  cross_precision)  # an fp32 checkpoint continues in bf16, a bf16 one in fp32 (checkpoints hold the fp32 masters)
    run 1 "$work/f32" || fail "fp32 run failed: $(tail -3 "$work/f32.log")"
    losses "$work/f32" >"$work/a"
    for pair in "fp32 bf16" "bf16 fp32"; do
      set -- $pair
      run 1 "$work/src_$1" train.precision="$1" train.max_steps_per_run=10; [ $? -eq 75 ] || fail "$1 first half"
      run 1 "$work/to_$2" train.precision="$2" checkpoint.resume="$work/src_$1/checkpoints/step_00000010.h5" \
        || fail "$1 -> $2 resume failed: $(tail -3 "$work/to_$2.log")"
      grep -q "resumed from .*step_00000010.h5" "$work/to_$2.log" || fail "$1 -> $2 did not resume from step 10"
      losses "$work/to_$2" >"$work/b"
      [ "$(wc -l <"$work/b")" -eq 10 ] || fail "expected 10 resumed steps"
      # Steps 11..20 within 1% of the fp32 run's losses (~0.04 at these losses, llm.c's bf16-vs-fp32 margin is
      # 0.05; measured 2.4e-4 fp32->bf16, 7.6e-5 bf16->fp32). A run that did not take the checkpoint's weights
      # would restart near the initial loss, several percent above the loss at step 11.
      close "$work/a" "$work/b" 1e-2 || fail "$1 -> $2: losses after the switch are not within 1% of fp32"
      echo "ok: $1 checkpoint at step 10 continued in $2"
    done ;;
  reshard)
    run 4 "$work/full" parallel.tp=2 parallel.dp=2 || fail "uninterrupted run failed"
    run 4 "$work/src" parallel.tp=2 parallel.dp=2 train.max_steps_per_run=10; [ $? -eq 75 ] || fail "first half"
    losses "$work/full" >"$work/a"
    # The global batch (micro_batch_size x micro_batches x dp) is kept: one rank takes 8 micro-batches.
    for target in "4 parallel.tp=1 parallel.pp=2 parallel.dp=2" "1 parallel.tp=1 parallel.dp=1 train.micro_batches=8"; do
      set -- $target; n=$1; shift
      resume_to "to$n" "$n" "$work/src/checkpoints/step_00000010.h5" 10 "$@"  # resharded tp=2 dp=2 -> n ranks
      grep -q "written on tp=2 pp=1 dp=2" "$work/to$n.log" || fail "resume did not report the writing grid"
      ! grep -q "warning: global batch" "$work/to$n.log" || fail "the global batch changed on resume"
    done ;;
  reshard_sp)
    # Sequence parallelism changes where activations live, not the parameters: a Llama run saved at tp=2 with it
    # resumes without it, and at one rank (the checkpoint's tensors are in global shapes either way).
    run 2 "$work/full" "${llama[@]}" parallel.tp=2 parallel.sequence_parallel=true || fail "uninterrupted run failed"
    run 2 "$work/src" "${llama[@]}" parallel.tp=2 parallel.sequence_parallel=true train.max_steps_per_run=10
    [ $? -eq 75 ] || fail "first half"
    losses "$work/full" >"$work/a"
    for target in "2 parallel.tp=2 parallel.sequence_parallel=false" "1 parallel.tp=1"; do
      set -- $target; n=$1; shift
      # 1e-5 as for reshard: the sequence split, too, only reorders additions
      resume_to "sp_to$n" "$n" "$work/src/checkpoints/step_00000010.h5" 10 "${llama[@]}" "$@"
    done ;;
  sigkill)
    run 1 "$work/full" checkpoint.every=10 || fail "uninterrupted run failed"
    GRIDTRAIN_CRASH_IN_CHECKPOINT=20 run 1 "$work/crash" checkpoint.every=10; code=$?
    [ $code -ne 0 ] || fail "the crash hook did not fire"
    [ -f "$work/crash/checkpoints/step_00000010.h5" ] || fail "the step-10 checkpoint is gone"
    [ ! -f "$work/crash/checkpoints/step_00000020.h5" ] || fail "a half-written step-20 checkpoint looks valid"
    run 1 "$work/crash" checkpoint.every=10 checkpoint.resume=auto || fail "resume after the crash failed: $(tail -3 "$work/crash.log")"
    grep -q "resumed from .*step_00000010.h5" "$work/crash.log" || fail "did not resume from step 10"
    losses "$work/full" >"$work/a"; losses "$work/crash" | awk '!seen[$1]++ || 1' | tail -10 >"$work/b"
    tail -10 "$work/a" >"$work/a10"
    cmp -s "$work/a10" "$work/b" || { diff "$work/a10" "$work/b"; fail "steps 11..20 differ from the uninterrupted run"; }
    echo "ok: killed during the step-20 write; resumed from step 10; steps 11..20 identical" ;;
  corrupt)
    run 1 "$work/r" checkpoint.every=5 checkpoint.keep=5 train.steps=20 || fail "run failed"
    f="$work/r/checkpoints/step_00000020.h5"
    size=$(stat -c %s "$f")
    python3 -c 'import sys
f=open(sys.argv[1],"r+b"); n=int(sys.argv[2]); f.seek(n//2); b=f.read(64); f.seek(n//2); f.write(bytes(x^0xFF for x in b))' "$f" "$size"
    run 1 "$work/r" checkpoint.every=5 checkpoint.keep=5 train.steps=25 checkpoint.resume=auto \
      || fail "resume with a corrupt newest checkpoint failed: $(tail -3 "$work/r.log")"
    grep -q "warning: skipping invalid checkpoint .*step_00000020.h5" "$work/r.log" || fail "the corrupt checkpoint was not reported"
    grep -q "resumed from .*step_00000015.h5" "$work/r.log" || fail "did not fall back to step 15"
    bad=$work/bad.h5; cp "$work/r/checkpoints/step_00000015.h5" "$bad"; truncate -s 4096 "$bad"
    run 1 "$work/t" checkpoint.resume="$bad"; code=$?
    [ $code -ne 0 ] || fail "a truncated checkpoint was accepted"
    grep -q "gridtrain: error: .*bad.h5" "$work/t.log" || fail "the truncated file's error does not name it"
    run 1 "$work/m" model.d_model=64 checkpoint.resume="$work/r/checkpoints/step_00000015.h5"; code=$?
    [ $code -ne 0 ] || fail "a checkpoint of another model was accepted"
    grep -q "gridtrain: error: .*another model" "$work/m.log" || fail "another model's checkpoint: unclear error"
    echo "ok: corrupt newest skipped, truncated and foreign checkpoints rejected with the file named" ;;
  stop)
    run 1 "$work/full" || fail "uninterrupted run failed"
    # a stop file that is already there: one step, a checkpoint, exit 75; the resumed run matches bit for bit
    : >"$work/STOP"
    run 1 "$work/f" train.stop_file="$work/STOP"; code=$?
    [ $code -eq 75 ] || fail "stop file: exit $code, expected 75: $(tail -3 "$work/f.log")"
    [ -f "$work/f/checkpoints/step_00000001.h5" ] || fail "stop file: no step-1 checkpoint"
    grep -q '"status": "preempted"' "$work/f/summary.json" || fail "stop file: summary is not 'preempted'"
    run 1 "$work/f" checkpoint.resume=auto train.stop_file="$work/absent" || fail "resume after the stop file failed"
    losses "$work/full" >"$work/a"; losses "$work/f" >"$work/b"
    cmp -s "$work/a" "$work/b" || { diff "$work/a" "$work/b" | head; fail "stopped and resumed losses differ"; }
    # two ranks: only rank 0 looks at the file, both stop at the same step
    run 2 "$work/f2" train.stop_file="$work/STOP"; code=$?
    [ $code -eq 75 ] || fail "stop file on 2 ranks: exit $code, expected 75: $(tail -3 "$work/f2.log")"
    [ -f "$work/f2/checkpoints/step_00000001.h5" ] || fail "stop file on 2 ranks: no step-1 checkpoint"
    # SIGUSR1 while the trainer is still starting (it measures an sgemm for MFU then builds the model): the request
    # must not be lost (MPICH's own SIGUSR1 handler swallowed it once) nor kill the process
    "$bin" "${common[@]}" output.dir="$work/s" train.steps=1000000 output.peak_gflops=0 >"$work/s.log" 2>&1 &
    pid=$!
    t=0
    until grep -q "^gridtrain:" "$work/s.log" 2>/dev/null; do
      sleep 0.01; t=$((t + 1)); [ $t -lt 6000 ] || { kill -9 $pid; fail "the trainer printed nothing in 60 s"; }
    done
    kill -USR1 $pid
    t=0
    while kill -0 $pid 2>/dev/null && [ $t -lt 1200 ]; do sleep 0.1; t=$((t + 1)); done
    kill -9 $pid 2>/dev/null
    wait $pid; code=$?
    [ $code -eq 75 ] || fail "SIGUSR1 during start-up: exit $code, expected 75 (137: the request was lost): $(tail -3 "$work/s.log")"
    # honoured at the next start-up phase (src/train/startup_stop.hpp): no step trained, so nothing to save
    grep -q "^gridtrain: stopped on request (signal) during start-up, before " "$work/s.log" \
      || fail "SIGUSR1 during start-up: not honoured during start-up: $(tail -2 "$work/s.log")"
    # a request that came in before the re-exec that selects the BLAS kernels reaches the new image
    GRIDTRAIN_STOP_PENDING=10 run 1 "$work/e"; code=$?
    [ $code -eq 75 ] && grep -q "^gridtrain: stopped on request (signal) during start-up" "$work/e.log" \
      || fail "carried stop request: exit $code: $(tail -2 "$work/e.log")"
    # a run that cannot reach a step boundary (its peer is stopped, so rank 0 waits in the step's all-reduce):
    # the first SIGTERM is a stop request and changes nothing, a second one ends the rank
    timeout -k 5 120 "$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$work/k" train.steps=1000000 >"$work/k.log" 2>&1 &
    launcher=$!
    t=0
    until [ -s "$work/k/metrics.jsonl" ]; do
      sleep 0.05; t=$((t + 1)); [ $t -lt 1200 ] || fail "stuck run: training did not start: $(tail -3 "$work/k.log")"
    done
    r0=""; r1=""
    for p in $(pgrep -f "output.dir=$work/k "; pgrep -f "output.dir=$work/k\$"); do
      # the rank runs the program the gridtrain launcher executes (src/cli/launcher.cpp): gridtrain-bin beside it
      [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$bin")-bin" ] || continue
      case $(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -m1 '^PMI_RANK=') in
        PMI_RANK=0) r0=$p ;; PMI_RANK=1) r1=$p ;;
      esac
    done
    [ -n "$r0" ] && [ -n "$r1" ] || { kill -9 $launcher; fail "stuck run: rank processes not found"; }
    kill -STOP "$r1"; sleep 0.5
    kill -TERM "$r0"; sleep 0.5
    kill -0 "$r0" 2>/dev/null || { kill -9 "$r1"; fail "stuck run: one SIGTERM ended the rank (it should only ask it to stop)"; }
    kill -TERM "$r0"
    t=0
    while kill -0 "$r0" 2>/dev/null && [ $t -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
    gone=1; kill -0 "$r0" 2>/dev/null && gone=0
    kill -9 "$r0" "$r1" 2>/dev/null; kill -CONT "$r1" 2>/dev/null
    wait $launcher 2>/dev/null
    [ $gone = 1 ] || fail "stuck run: a second SIGTERM did not end the rank within 10 s"
    echo "ok: stop file (1 and 2 ranks): a checkpoint and exit 75; SIGUSR1 during start-up and a carried request: exit 75 during start-up; a stuck rank ends on the second SIGTERM" ;;
  *) fail "unknown case $case" ;;
esac
