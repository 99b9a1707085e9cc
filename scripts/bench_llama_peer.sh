#!/usr/bin/env bash
# gridtrain's Llama against the PyTorch 1.13 peer (scripts/bench_pytorch.py's Llama blocks: same shapes, RMSNorm,
# SwiGLU, RoPE, GQA, untied head; its attention is materialized, PyTorch 1.13 has no fused CPU attention),
# alternated on core 0 with one thread (issue 23). Figures are CPU time per step (robust on a shared machine):
# the peer's cpu_ms_per_step (warm-up steps left out), and for gridtrain the CPU time of a STEPS+1-step run minus
# that of a 1-step run, over STEPS (start-up and the first step cancel). Writes $OUT/llama_peer.txt and .jsonl.
#   scripts/bench_llama_peer.sh [ROUNDS (2)] [STEPS (3)] [SEQ_LEN (1024)] [PRESET (llama-125m)] [GRIDTRAIN]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2} steps=${2:-3} T=${3:-1024} preset=${4:-llama-125m} bin=${5:-$here/build/src/cli/gridtrain}
out=${OUT:-$here/runs/bench/llama_peer}; mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
/usr/bin/python3 - "$here" "$tmp" "$bin" "$rounds" "$steps" "$T" "$preset" "$out" <<'PY' | tee "$out/llama_peer.txt"
import json, resource, statistics, subprocess, sys, time
here, tmp, binary, rounds, steps, T, preset, out = sys.argv[1:9]
rounds, steps = int(rounds), int(steps)
pin = ["taskset", "-c", "0"]
def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
def peer():
    o = f"{tmp}/peer.jsonl"
    subprocess.run(pin + ["/usr/bin/python3", f"{here}/scripts/bench_pytorch.py", "--preset", preset, "--seq-len", T,
                          "--batch", "1", "--threads", "1", "--steps", str(steps), "--out", o], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(open(o).read().splitlines()[-1])
def gridtrain(n):
    c0 = children_cpu()
    subprocess.run(pin + [binary, "train", "--config", preset, f"model.seq_len={T}", "train.micro_batch_size=1",
                          f"train.steps={n}", "checkpoint.save_final=false", "output.log_every=1000",
                          f"output.dir={tmp}/gt{n}"], check=True, stdout=subprocess.DEVNULL)
    return children_cpu() - c0
cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} | {cpu} | core 0, one thread | {preset} T={T} B=1 fp32"
      f" | {steps} timed steps | load {open('/proc/loadavg').read().split()[:3]}")
ratios = []
for r in range(rounds):
    p = peer()
    g = (gridtrain(steps + 1) - gridtrain(1)) / steps * 1e3
    ratios.append(p["cpu_ms_per_step"] / g)
    line = {"round": r, "peer_cpu_ms": p["cpu_ms_per_step"], "peer_params": p["params"], "gridtrain_cpu_ms": g,
            "ratio_peer_over_gridtrain": ratios[-1], "load": open("/proc/loadavg").read().split()[:3]}
    print(json.dumps(line))
    with open(f"{out}/llama_peer.jsonl", "a") as f:
        f.write(json.dumps(dict(line, preset=preset, seq_len=int(T), cpu=cpu)) + "\n")
print(f"gridtrain is {statistics.median(ratios):.2f}x the peer's speed (median of {rounds} rounds, CPU time per step)")
PY
