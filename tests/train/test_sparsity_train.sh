#!/usr/bin/env bash
# 2:4 sparsity in training (issue 11), one rank on the learnable synthetic task (tiny preset, 60 steps):
#   - SR-STE and ASP (pruned after 20 updates) end within MARGIN of the dense run's final loss;
#   - summary.json carries the FLOP ledger: the skipped fraction is the forward half of the masked products,
#     12 L C^2 per token (qkv 3C^2 + proj C^2 + fc 4C^2 + mlp proj 4C^2 per layer), over flops_per_token;
#   - sparsity with ZeRO and an unknown pattern are one-line errors naming the key, on every rank.
#   test_sparsity_train.sh GRIDTRAIN MPIEXEC
common=(train --config tiny train.steps=60 output.log_every=20 output.peak_gflops=1 checkpoint.save_final=false)
TAG=sparsity
source "$(dirname "$0")/../common/train_runs.sh"
run() { run_np 1 "$@"; }
run dense
run srste sparsity.pattern=2:4 sparsity.recipe=srste
run asp sparsity.pattern=2:4 sparsity.recipe=asp sparsity.asp_step=20

python3 - "$work" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
s = {k: json.load(open(f"{w}/{k}/summary.json")) for k in ("dense", "srste", "asp")}
d, sr, asp = (s[k]["final_loss"] for k in ("dense", "srste", "asp"))
print(f"final loss after 60 steps: dense {d:.4f}, 2:4 SR-STE {sr:.4f}, 2:4 ASP {asp:.4f}")
# MARGIN: measured on 2026-12-03 dense 1.0011, SR-STE 1.0113 (+0.010), ASP 1.0059 (+0.005); the runs are
# deterministic, so the margin absorbs only BLAS differences between machines: 0.1 is ten times the larger gap
# and well below what a broken mask costs (a model with all linear weights zero stays near ln 256 = 5.5).
MARGIN = 0.1
ok = True
for name, v in (("SR-STE", sr), ("ASP", asp)):
    if not v <= d + MARGIN:
        print(f"FAIL: 2:4 {name} ends at {v:.4f}, more than {MARGIN} above dense {d:.4f}"); ok = False
L, C = 2, 128  # inputs/tiny.toml
for k in ("srste", "asp"):
    want = 12 * L * C * C / s[k]["flops_per_token"]
    got = s[k].get("sparse_skipped_flop_fraction")
    if got is None or abs(got - want) > 1e-12 * want:
        print(f"FAIL: {k}: skipped FLOP fraction {got}, expected {want}"); ok = False
if "sparse_skipped_flop_fraction" in s["dense"]:
    print("FAIL: the dense run reports skipped FLOPs"); ok = False
sys.exit(0 if ok else 1)
PY

bad_run 1 "an unknown pattern" sparsity.pattern sparsity.pattern=1:4
bad_run 2 "2:4 with ZeRO-1" sparsity.pattern sparsity.pattern=2:4 parallel.dp=2 parallel.zero=1
echo "ok"
