#!/usr/bin/env bash
# The seed's linear-scaling claim (k GPUs, k x batch, k x lr: the same accuracy in 1/k of the steps; Goyal et al.
# 2017) on ResNet-20 / Fashion-MNIST through gridtrain train. Each k runs on ONE rank with k micro-batches of 128:
# the same function as k data-parallel ranks of 128 with per-rank BatchNorm (vision_resnet_train tests that
# dp = 2 equals this accumulation), so the study needs no k cores; only its wall time is not a k-rank time.
#   scripts/bench_linear_scaling.sh OUT.json [EPOCHS=5] [KS="1 2 4 8 16"] [PARALLEL=2]
#   EXTRA="train.optimizer=lars train.lr=0.5" ...: more keys for every run (recorded in OUT.json as "extra")
# lr = 0.1 x k (train.lr_scaling = linear, reference batch 128), warm-up 1 epoch from 0.1 for k > 1, cosine to 0,
# SGD momentum 0.9, weight decay 5e-4, crop + flip. Evaluation on the whole test split at the end (79 x 128 = 10,112
# images at k = 1: the test split once and 112 again; fewer repeats at larger k).
set -eu
out=${1:?usage: bench_linear_scaling.sh OUT.json [EPOCHS] [KS] [PARALLEL]}
epochs=${2:-5}
ks=${3:-"1 2 4 8 16"}
parallel=${4:-2}
extra=${EXTRA:-}
here=$(cd "$(dirname "$0")/.." && pwd)
# a private copy of the binary: a rebuild during the study must not replace it under a run
bin_src=${GRIDTRAIN:-$here/build/src/cli/gridtrain}
data=${DATA:-$here/data/fashion-mnist.h5}
source "$here/scripts/bench_lib.sh"
bench_setup
bin="$work/gridtrain"
cp "$bin_src" "$bin"; cp "$(dirname "$bin_src")/gridtrain-bin" "$work/"  # the launcher execs the program beside it
[ -f "$data" ] || "$bin" prepare --images fashion-mnist --out "$data"
run_k() {
  local k=$1 gb=$((128 * $1))
  local steps=$(( (60000 * epochs + gb - 1) / gb ))
  local warm=$(( k > 1 ? (60000 + gb - 1) / gb : 0 ))
  local val=$(( (10000 + gb - 1) / gb ))
  local t0=$(date +%s.%N)
  "$bin" train --config resnet20-fmnist data.path="$data" output.dir="$work/k$k" output.peak_gflops=1 \
    train.steps=$steps train.micro_batches=$k train.lr_scaling=linear train.lr_reference_batch=128 \
    train.warmup_steps=$warm data.val_every=$steps data.val_batches=$val output.log_every=100 \
    checkpoint.save_final=false $extra >"$work/k$k.log" 2>&1 || { echo "k=$k: the run failed:"; tail -3 "$work/k$k.log"; return 0; }
  local t1=$(date +%s.%N)
  python3 - "$work/k$k/summary.json" "$k" "$steps" "$warm" "$t0" "$t1" "$extra" >"$work/k$k.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
k, steps, warm, t0, t1 = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
lr = next((float(kv.split("=", 1)[1]) for kv in sys.argv[7].split() if kv.startswith("train.lr=")), 0.1)
print(json.dumps({"k": k, "global_batch": 128 * k, "peak_lr": lr * k, "steps": steps, "warmup_steps": warm,
                  "extra": sys.argv[7],
                  "val_top1": s.get("val_top1", -1), "val_loss": s["val_loss"], "final_loss": s["final_loss"],
                  "wall_s": t1 - t0, "images_per_s": s.get("images_per_s")}))
PY
  echo "k=$k: $(cat "$work/k$k.json")"
}
running=0
for k in $ks; do
  run_k "$k" &
  running=$((running + 1))
  if [ $running -ge "$parallel" ]; then wait -n; running=$((running - 1)); fi
done
wait
python3 - "$out" "$epochs" $(for k in $ks; do [ -f "$work/k$k.json" ] && echo "$work/k$k.json"; done) <<'PY'
import json, sys, platform, subprocess, datetime
rows = [json.load(open(p)) for p in sys.argv[3:]]
cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("Model name")), "?")
json.dump({"date": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z", "cpu": model,
           "epochs": int(sys.argv[2]), "runs": rows}, open(sys.argv[1], "w"), indent=1)
for r in rows:
    print("k=%2d batch %5d lr %.1f steps %5d: top-1 %.2f%%" % (r["k"], r["global_batch"], r["peak_lr"], r["steps"], 100 * r["val_top1"]))
PY
