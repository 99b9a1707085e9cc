#!/usr/bin/env bash
# The PyTorch peer against itself and against gridtrain, alternated on one core (issue 20): each round runs
# the peer script of an older commit, the current peer script, and gridtrain's `small` fp32 step, all pinned
# to core 0 (taskset) with one thread. Figures are CPU time per step (robust when the machine is shared): the
# peers' own `cpu_ms_per_step`, and for gridtrain the CPU time of a STEPS+1-step run minus that of a 1-step run
# (start-up and the first step cancel), over STEPS. Prints each round and the ratios; writes
# $OUT/peer_ab.jsonl and $OUT/peer_ab.txt. PRECISION=bf16: gridtrain in bf16 against the peers' bf16 autocast.
#   scripts/bench_peer_ab.sh [ROUNDS (3)] [STEPS (4)] [OLD_COMMIT (db478c1)] [GRIDTRAIN (build/src/cli/gridtrain)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3} steps=${2:-4} old=${3:-db478c1} bin=${4:-$here/build/src/cli/gridtrain}
precision=${PRECISION:-fp32}
out=${OUT:-$here/runs/bench/peer_ab_$precision}; rm -rf "$out"; mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" && ln -s "$here/inputs" "$tmp/inputs"
git -C "$here" show "$old:scripts/bench_pytorch.py" >"$tmp/scripts/bench_pytorch.py"
export OMP_NUM_THREADS=1
/usr/bin/python3 - "$here" "$tmp" "$bin" "$rounds" "$steps" "$old" "$out" "$precision" <<'PY' | tee "$out/peer_ab.txt"
import json, os, resource, statistics, subprocess, sys, time
here, tmp, binary, rounds, steps, old, out, precision = sys.argv[1:9]
autocast = ["--autocast", "bf16"] if precision == "bf16" else []
rounds, steps = int(rounds), int(steps)
pin = ["taskset", "-c", "0"]
load = lambda: open("/proc/loadavg").read().split()[:3]
def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
def peer(script, label, extra):
    o = f"{tmp}/{label}.jsonl"
    subprocess.run(pin + ["/usr/bin/python3", script, "--preset", "small", "--threads", "1", "--steps", str(steps),
                          "--out", o] + autocast + extra, check=True, stdout=subprocess.DEVNULL)
    return json.loads(open(o).read().splitlines()[-1])["cpu_ms_per_step"]
def gridtrain(n):
    c0 = children_cpu()
    subprocess.run(pin + [binary, "train", "--config", "small", f"train.steps={n}", "checkpoint.save_final=false",
                          "output.log_every=1000", f"output.dir={tmp}/gt{n}"], check=True, stdout=subprocess.DEVNULL)
    return children_cpu() - c0
cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} | {cpu} | {os.cpu_count()} cpus | core 0 | "
      f"small {precision} (peers: {'bf16 autocast' if autocast else 'fp32'}), {steps} timed steps | load {' '.join(load())}")
rows = []
for r in range(1, rounds + 1):
    l0 = load()
    po = peer(f"{tmp}/scripts/bench_pytorch.py", "old", [])
    pn = peer(f"{here}/scripts/bench_pytorch.py", "new", [])
    g = 1e3 * (gridtrain(steps + 1) - gridtrain(1)) / steps
    row = {"round": r, "peer_old_cpu_ms": po, "peer_new_cpu_ms": pn, "gridtrain_cpu_ms": g, "load_before": l0,
           "load_after": load()}
    rows.append(row)
    print(f"round {r}: peer {old} {po:7.0f} ms | peer now {pn:7.0f} ms | gridtrain {g:7.0f} ms (CPU per step) | "
          f"new/old peer {po / pn:.2f}x | gridtrain/old peer {po / g:.2f}x | gridtrain/new peer {pn / g:.2f}x | "
          f"load {' '.join(l0)} -> {' '.join(row['load_after'])}")
    with open(f"{out}/peer_ab.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
med = lambda k: statistics.median(x[k] for x in rows)
print(f"median: peer {old} {med('peer_old_cpu_ms'):.0f} ms, peer now {med('peer_new_cpu_ms'):.0f} ms, gridtrain "
      f"{med('gridtrain_cpu_ms'):.0f} ms; tokens/s by CPU time (1024 tokens/step): "
      f"{1024e3 / med('peer_old_cpu_ms'):.0f} / {1024e3 / med('peer_new_cpu_ms'):.0f} / {1024e3 / med('gridtrain_cpu_ms'):.0f}")
PY
