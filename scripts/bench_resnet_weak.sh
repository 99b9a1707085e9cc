#!/usr/bin/env bash
# ResNet-20 on Fashion-MNIST, dp = 2 weak scaling (issue 21: at least 95%, or the machine's own side-by-side floor
# as docs/benchmarks.md measures it for GPT): each rank keeps 128 images per step, so dp = 2 trains 256.
# Per repetition, interleaved: one rank alone; two independent one-rank runs side by side (no communication:
# what sharing the machine costs by itself); dp = 2. Figures: img/s over steps after the first WARM (median step
# time from metrics.jsonl), and the ratios dp2 / (2 x alone) and dp2 / (side-by-side pair).
#   scripts/bench_resnet_weak.sh OUT.json [REPS=3] [STEPS=60] [PRECISION=fp32]
# Needs an idle machine (2 cores: the pair and dp = 2 use both).
set -eu
out=${1:?usage: bench_resnet_weak.sh OUT.json [REPS] [STEPS] [PRECISION]}
reps=${2:-3} steps=${3:-60} precision=${4:-fp32} warm=10
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/bench_lib.sh"
bench_setup
cp "${GRIDTRAIN:-$here/build/src/cli/gridtrain}" "$work/"; cp "$(dirname "${GRIDTRAIN:-$here/build/src/cli/gridtrain}")/gridtrain-bin" "$work/"
data=${DATA:-$here/data/fashion-mnist.h5}
[ -f "$data" ] || "$work/gridtrain" prepare --images fashion-mnist --out "$data"
common=(train --config resnet20-fmnist data.path="$data" train.steps="$steps" train.precision="$precision"
        data.val_every=0 output.log_every=1000 output.peak_gflops=1 checkpoint.save_final=false)
run() {  # run NAME NP [core]
  local name=$1 np=$2
  if [ "$np" = 1 ]; then taskset -c "${3:-0}" "$work/gridtrain" "${common[@]}" output.dir="$work/$name" >"$work/$name.log" 2>&1
  else mpiexec -n "$np" --bind-to core "$work/gridtrain" "${common[@]}" parallel.dp="$np" output.dir="$work/$name" >"$work/$name.log" 2>&1; fi
}
# images per second of the run's median step after the warm-up (all ranks' images)
ips() { python3 - "$work/$1/metrics.jsonl" "$warm" "$2" <<'PY'
import json, statistics, sys
ms = [json.loads(l)["ms"] for l in open(sys.argv[1]) if l.strip()][int(sys.argv[2]):]
print(int(sys.argv[3]) * 128 / (statistics.median(ms) / 1000))
PY
}
: >"$work/rows"
for r in $(seq "$reps"); do
  run alone 1
  run pair_a 1 0 & run pair_b 1 1; wait
  run dp2 2
  a=$(ips alone 1) pa=$(ips pair_a 1) pb=$(ips pair_b 1) d=$(ips dp2 2)
  python3 -c 'import json,sys; a,pa,pb,d=map(float,sys.argv[1:5]); print(json.dumps({"rep": int(sys.argv[5]), "alone_img_s": a, "pair_img_s": pa+pb, "dp2_img_s": d, "dp2_over_2x_alone": d/(2*a), "dp2_over_pair": d/(pa+pb), "load": open("/proc/loadavg").read().split()[:3]}))' "$a" "$pa" "$pb" "$d" "$r" | tee -a "$work/rows"
done
python3 - "$work/rows" "$out" "$precision" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
s = {"cpu": cpu, "precision": sys.argv[3], "reps": rows,
     "median_dp2_over_2x_alone": statistics.median(r["dp2_over_2x_alone"] for r in rows),
     "median_dp2_over_pair": statistics.median(r["dp2_over_pair"] for r in rows)}
json.dump(s, open(sys.argv[2], "w"), indent=1)
print(f"dp=2 weak scaling: {s['median_dp2_over_2x_alone']:.3f} of 2 x one rank alone, {s['median_dp2_over_pair']:.3f} of two one-rank runs side by side (medians of {len(rows)})")
PY
