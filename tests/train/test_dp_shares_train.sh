#!/usr/bin/env bash
# parallel.dp_shares in training (docs/adaptive.md, "Data-parallel shares"): dp = 2, 4 micro-batches per step in
# all; the uneven splits 3,1 and 1,3 train on the same global batches with the same weights as the even 2,2, so
# every step's loss matches the even run's within fp32 rounding: relative 1e-6 (the sums run in another order,
# measured up to 3e-9 relative over 6 AdamW steps on the tiny preset, 2026-12-05; a wrong sample offset or a
# per-replica weighting changes it far more: the even split's offsets with 3,1 missed by 8e-4 relative at step 1).
#   test_dp_shares_train.sh GRIDTRAIN MPIEXEC
common=(train --config tiny parallel.dp=2 train.micro_batches=2 train.steps=6 output.log_every=1
        output.peak_gflops=1 checkpoint.save_final=false)
TAG=dpshares
source "$(dirname "$0")/../common/train_runs.sh"
run_np 2 even parallel.dp_shares=2,2
run_np 2 more_first parallel.dp_shares=3,1
run_np 2 more_last parallel.dp_shares=1,3
python3 - "$work" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
loss = {k: [json.loads(l)["loss"] for l in open(f"{w}/{k}/metrics.jsonl")] for k in ("even", "more_first", "more_last")}
ok = len(loss["even"]) == 6
for k in ("more_first", "more_last"):
    if len(loss[k]) != len(loss["even"]): ok = False; print(f"FAIL: {k}: {len(loss[k])} steps")
    for i, (a, b) in enumerate(zip(loss["even"], loss[k])):
        if abs(a - b) > 1e-6 * abs(a):
            ok = False; print(f"FAIL: {k} step {i + 1}: loss {b!r}, the even split's {a!r}")
print("losses", loss)
sys.exit(0 if ok else 1)
PY
echo "ok: dp_shares 3,1 and 1,3 give the even split's losses within 1e-6 relative"
