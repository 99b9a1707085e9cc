#!/usr/bin/env bash
# Top-k compression in training (issue 11), dp=2 on the learnable synthetic task (tiny preset, 60 steps):
#   - compress.method=topk at density 1 sends every entry (the chooser takes the dense all-reduce): the same
#     losses as method=none, bit for bit;
#   - top-k 4% with error feedback ends within MARGIN of the dense run's final loss;
#   - at 0.1% density, top-k without error feedback ends measurably worse than with it (by more than GAP):
#     error feedback is what keeps the dropped 99.9% from being lost. At 4% it is not worse with AdamW in this
#     run (measured: 0.994 without, 1.023 with; docs/compression.md), so the test does not claim it there.
#   - the wire figures in summary.json follow the transport formulas (docs/compression.md) from the parameter
#     count N at P = 2: dense fp32 sends 2(P-1)/P * 4 N = 4N bytes per step (ratio 1); all-gather at 4% sends
#     (P-1) * 8 * ceil(0.04 n) per bucket (ratio just under 12.5); the residual norm is reported for top-k only;
#   - compress.transport=shared_index sends the same bytes as all-gather at P = 2 but another sum (the leader's
#     indices): its losses differ from the all-gather run's;
#   - residuals in checkpoints: the 4% run stopped at step 30 and resumed on the same layout continues bit for bit
#     (with the residuals zeroed it would not: they hold 96% of the gradient's entries); resumed at dp=4 (the same
#     global batch) it warns that the residuals start at zero and finishes;
#   - compress.local_clip: far above every local norm (1e9) it changes nothing (bit for bit the 4% run); at 0.05,
#     below the local norms, the losses differ. With local_clip set every bucket waits for the end of backward,
#     without it the buckets are compressed and sent during backward: the bitwise equality of the two runs is
#     also the trainer-level check that the overlap changes nothing;
#   - compress.values=bf16: (index, bf16 value) pairs, 6 bytes each (ratio just under 4/(6*0.04) = 16.67), the
#     loss within MARGIN of dense as for fp32 values; compress.values without top-k is a config error;
#   - a bad compress key is a one-line error naming the key.
# The runs that only feed bitwise or differs-from checks (density 1, shared_index, both local_clip runs) stop
# after the first 12 of the 60 steps (run_short): those checks compare step by step, and the runs they are
# compared with keep their full 60 steps for the margin and ratio checks (issue 20: the suite's time).
#   test_compress_train.sh GRIDTRAIN MPIEXEC
common=(train --config tiny parallel.dp=2 train.steps=60 output.log_every=20 output.peak_gflops=1
        checkpoint.save_final=false)
TAG=compress
source "$(dirname "$0")/../common/train_runs.sh"
run() { run_np 2 "$@"; }
SHORT=12
run_short() { run_short_np 2 $SHORT "$@"; }

run dense compress.method=none
run_short full compress.method=topk compress.density=1
run ef compress.method=topk compress.density=0.04 compress.error_feedback=true
run ef_low compress.method=topk compress.density=0.001 compress.error_feedback=true
run noef_low compress.method=topk compress.density=0.001 compress.error_feedback=false
run_short shared compress.method=topk compress.density=0.04 compress.transport=shared_index
run ef_bf16 compress.method=topk compress.density=0.04 compress.values=bf16
[[ "$(losses ef | head -n $SHORT)" != "$(losses shared)" ]] || fail "compress.transport=shared_index gives the all-gather run's losses"
python3 - "$work" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
s = {k: json.load(open(f"{w}/{k}/summary.json")) for k in ("dense", "ef", "shared", "ef_bf16")}
N = s["dense"]["params"]
ok = True
def expect(cond, msg):
    global ok
    if not cond: print("FAIL:", msg); ok = False
expect(s["dense"]["wire_bytes_per_step"] == 4 * N and s["dense"]["compression_ratio"] == 1,
       f"dense: {s['dense']['wire_bytes_per_step']} bytes, ratio {s['dense']['compression_ratio']}; expected {4 * N}, 1")
expect("residual_norm" not in s["dense"], "dense reports a residual")
r = s["ef"]["compression_ratio"]
expect(12.0 < r <= 12.5, f"top-k 4% all-gather: ratio {r}, expected just under 12.5 (ceil per bucket)")
expect(s["ef"].get("residual_norm", 0) > 0, "top-k with error feedback reports no residual norm")
r16 = s["ef_bf16"]["compression_ratio"]
expect(16.0 < r16 <= 4 / (6 * 0.04), f"top-k 4% with bf16 values: ratio {r16}, expected just under 16.67")
expect(s["ef_bf16"]["final_loss"] <= s["dense"]["final_loss"] + 0.25,  # MARGIN below
       f"top-k 4% with bf16 values ends at {s['ef_bf16']['final_loss']}, dense at {s['dense']['final_loss']}")
expect(s["shared"]["wire_bytes_per_step"] == s["ef"]["wire_bytes_per_step"],
       "shared index and all-gather should send the same bytes at P = 2")
sys.exit(0 if ok else 1)
PY

[[ "$(losses dense | head -n $SHORT)" == "$(losses full)" ]] || fail "top-k at density 1 differs from dense: $(paste <(losses dense) <(losses full) | head -3)"
d=$(final dense) e=$(final ef) el=$(final ef_low) nl=$(final noef_low)
echo "final loss after 60 steps: dense $d, top-k 4% with error feedback $e; 0.1%: with $el, without $nl"
# Margins: measured on 2026-12-03 dense 0.897, 4% with EF 1.023 (+0.126), 0.1% with EF 4.42 and without 5.00
# (+0.58). The runs are deterministic (seeded data and selection, 2-rank sums are order-free), so the margins
# only absorb BLAS differences between machines: MARGIN 0.25 is about twice the measured gap, GAP 0.25 less
# than half of the measured one; the untrained model starts at ln 256 = 5.5.
python3 - "$d" "$e" "$el" "$nl" <<'PY' || exit 1
import sys
d, e, el, nl = map(float, sys.argv[1:])
MARGIN, GAP = 0.25, 0.25
ok = True
if not e <= d + MARGIN:
    print(f"FAIL: top-k 4% with error feedback ends at {e:.4f}, more than {MARGIN} above dense {d:.4f}"); ok = False
if not nl >= el + GAP:
    print(f"FAIL: at 0.1% without error feedback {nl:.4f} is not {GAP} worse than with it {el:.4f}"); ok = False
sys.exit(0 if ok else 1)
PY

run_short clip_high compress.method=topk compress.density=0.04 compress.local_clip=1e9
run_short clip_low compress.method=topk compress.density=0.04 compress.local_clip=0.05
[[ "$(losses clip_high)" == "$(losses ef | head -n $SHORT)" ]] || fail "compress.local_clip=1e9 changed the run"
[[ "$(losses clip_low)" != "$(losses ef | head -n $SHORT)" ]] || fail "compress.local_clip=0.05 did not change the run"
ck=(compress.method=topk compress.density=0.04 compress.error_feedback=true checkpoint.dir="$work/ck")
"$mpiexec" -n 2 "$bin" "${common[@]}" output.dir="$work/ck_first" "${ck[@]}" train.max_steps_per_run=30 \
  >"$work/ck_first.log" 2>&1; [[ $? == 75 ]] || fail "the sliced run did not stop at step 30: $(tail -2 "$work/ck_first.log")"
run ck_same "${ck[@]}" checkpoint.resume=auto
[[ "$(losses ck_same)" == "$(losses ef | tail -n 30)" ]] || fail "resume with residuals on the same layout is not bitwise"
"$mpiexec" -n 4 "$bin" "${common[@]}" output.dir="$work/ck_four" "${ck[@]}" checkpoint.resume=auto parallel.dp=4 \
  train.micro_batch_size=4 >"$work/ck_four.log" 2>&1 || fail "resume on dp=4 failed: $(tail -2 "$work/ck_four.log")"
grep -q "error-feedback residuals start at zero" "$work/ck_four.log" || fail "no warning on another layout"
bad_run 2 "compress.density=0" compress.density compress.density=0
bad_run 2 "compress.values without top-k" compress.values compress.values=bf16
echo "ok"
