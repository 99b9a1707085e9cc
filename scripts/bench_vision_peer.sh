#!/usr/bin/env bash
# gridtrain's ResNet training step against torchvision's (PyTorch 1.13 + torchvision 0.14, Debian's
# python3-torchvision; a benchmark dependency, never a test one), alternated on core 0 with one thread, on the same
# synthetic ImageNet-shaped batch (issue 21: ResNet-50 at 224x224, target 1.3x). Figures are the medians of process
# CPU time per timed step (robust on a shared machine; wall time is in the JSON too), after one untimed warm-up
# step each, under the same allocator settings (below). The peer runs channels-last (its faster layout on CPUs) and contiguous once, to show the difference.
# PRECISIONS="fp32 fp32-winograd bf16" (the default) runs each round in all three: fp32 against fp32 (the same
# direct convolutions on both sides), gridtrain's fp32 with model.conv_algorithm = "winograd" (bench_vision
# --winograd 1; direct where oneDNN has no Winograd kernel, and the JSON's conv field says so) against the same
# fp32 peer, and gridtrain's bf16 convolutions (bench_vision --bf16 1, train.precision = "bf16") against PyTorch's
# CPU autocast to bf16; the summary adds gridtrain bf16 over gridtrain fp32 (issue 21's 1.6x target on a CPU with
# bf16 units).
# GT_BENCH_VISION=BIN: the gridtrain binary (default build/bench/bench_vision). GT_BENCH_VISION_BASE=BIN: a second
# gridtrain binary (an older build) run in every round beside the first (after it in odd rounds, before it in
# even ones), so that a change is measured against the peer and against its own base in the same rounds (the
# JSON's base_cpu_s and base_over_new): this VM's speed drifts by 10-20% between runs a few minutes apart, so
# ratios from separate runs do not compare.
# Writes $OUT/vision_peer.txt and .jsonl.
#   scripts/bench_vision_peer.sh [ROUNDS (2)] [BATCH (16)] [STEPS (3)] [MODEL (resnet50)] [IMAGE (224)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2} batch=${2:-16} steps=${3:-3} model=${4:-resnet50} image=${5:-224}
bin=${GT_BENCH_VISION:-$here/build/bench/bench_vision}
base=${GT_BENCH_VISION_BASE:-}
out=${OUT:-$here/runs/bench/vision_peer}; mkdir -p "$out"
/usr/bin/python3 -c "import torchvision" 2>/dev/null ||
  { echo "bench_vision_peer.sh: needs python3-torchvision (apt-get install python3-torchvision)" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Both run under the same allocator, the fastest the peer was found to get: jemalloc (Debian's libjemalloc2, what
# PyTorch's CPU performance guide recommends) told never to return freed memory, when it is installed. Without it
# every fresh activation and gradient tensor of the peer is a new mapping whose pages fault on first touch, which made
# the peer 1.96x slower (6.64 -> 3.40 s CPU per step at batch 16, measured 2026-12-05). glibc told the same (no mmap
# for large blocks, no trimming) left the peer's step wandering between 2.6 and 4.2 s from one process to the next;
# under jemalloc it ran 2.54-2.57 s in three processes, and gridtrain 6% faster as well (2026-12-06). jemalloc's
# default decay is no good here (the peer took 12-16 s a step: freed pages go back and fault in again).
# ALLOCATOR=glibc forces the glibc setting.
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ "${ALLOCATOR:-jemalloc}" = jemalloc ] && [ -f "$jemalloc" ]; then
  export LD_PRELOAD=$jemalloc MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
  allocator="jemalloc (no decay)"
else
  export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736}
  allocator="glibc (no mmap, no trim; apt-get install libjemalloc2 for the faster peer)"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "# $(date -u +%FT%TZ) | $cpu | core 0, one thread | $model ${image}x${image} batch $batch | $steps timed steps | $allocator | load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/vision_peer.txt"
field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }
precisions=${PRECISIONS:-fp32 fp32-winograd bf16}
gt_run() {  # BINARY NAME: one gridtrain run of the round's precision ($prec, $gflag, $wflag)
  taskset -c 0 "$1" --synthetic 1 --model "$model" --image "$image" --batch "$batch" --steps "$steps" \
    --bf16 "$gflag" --winograd "$wflag" --out "$tmp/$2_$prec.json" >/dev/null
}
for r in $(seq "$rounds"); do
  for prec in $precisions; do
    flag=(); gflag=0; wflag=0; [ "$prec" = bf16 ] && flag=(--bf16) && gflag=1
    [ "$prec" = fp32-winograd ] && wflag=1
    layouts=(channels_last); [ "$r" = 1 ] && [ "$prec" = fp32 ] && layouts+=(contiguous)
    for layout in "${layouts[@]}"; do
      taskset -c 0 /usr/bin/python3 "$here/scripts/bench_torchvision.py" --model "$model" --image "$image" --batch "$batch" \
        --steps "$steps" --threads 1 --layout "$layout" "${flag[@]}" --out "$tmp/peer_${prec}_$layout.jsonl" >/dev/null
    done
    b=0
    if [ -n "$base" ] && [ $((r % 2)) = 0 ]; then gt_run "$base" base; fi  # the base first in even rounds
    gt_run "$bin" gt
    if [ -n "$base" ] && [ $((r % 2)) = 1 ]; then gt_run "$base" base; fi
    [ -n "$base" ] && b=$(field "$tmp/base_$prec.json" median_cpu_step_s)
    p=$(field "$tmp/peer_${prec}_channels_last.jsonl" median_cpu_step_s) g=$(field "$tmp/gt_$prec.json" median_cpu_step_s)
    conv=$(field "$tmp/gt_$prec.json" conv_backend)
    line=$(python3 -c 'import json,sys; p,g,b=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[7]); d={"round": int(sys.argv[3]), "precision": sys.argv[5], "conv": sys.argv[6], "peer_cpu_s": p, "gridtrain_cpu_s": g, "peer_img_per_cpu_s": int(sys.argv[4])/p, "gridtrain_img_per_cpu_s": int(sys.argv[4])/g, "ratio": p/g, "load": open("/proc/loadavg").read().split()[:3]}
if b > 0: d.update({"base_cpu_s": b, "base_over_new": b/g, "base_ratio": p/b})
print(json.dumps(d))' "$p" "$g" "$r" "$batch" "$prec" "$conv" "$b")
    echo "$line" | tee -a "$out/vision_peer.txt"
    echo "$line" >>"$out/vision_peer.jsonl"
  done
done
[ -f "$tmp/peer_fp32_contiguous.jsonl" ] && echo "peer, contiguous layout (round 1): $(field "$tmp/peer_fp32_contiguous.jsonl" median_cpu_step_s) s CPU per step" | tee -a "$out/vision_peer.txt"
python3 - "$out/vision_peer.txt" <<'PY' | tee -a "$out/vision_peer.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for prec in ("fp32", "fp32-winograd", "bf16"):
    r = [x["ratio"] for x in rows if x.get("precision", "fp32") == prec]
    if r:
        print(f"{prec}: gridtrain is {statistics.median(r):.2f}x the torchvision peer's speed (median of {len(r)} rounds, CPU time per step)")
    b = [x for x in rows if x.get("precision", "fp32") == prec and "base_cpu_s" in x]
    if b:
        print(f"{prec}: the base binary is {statistics.median(x['base_ratio'] for x in b):.2f}x the peer's speed; "
              f"base step / new step {statistics.median(x['base_over_new'] for x in b):.3f} (medians of {len(b)} rounds)")
by_round = {}
for x in rows:
    by_round.setdefault(x["round"], {})[x.get("precision", "fp32")] = x["gridtrain_cpu_s"]
pairs = [v["fp32"] / v["bf16"] for v in by_round.values() if "fp32" in v and "bf16" in v]
if pairs:
    print(f"gridtrain bf16 is {statistics.median(pairs):.2f}x gridtrain fp32 (median of {len(pairs)} rounds; each round's pair ran back to back)")
PY
