#!/usr/bin/env bash
# Weak scaling 1 -> 2 ranks on the `small` preset (issue #3): one rank per core (pinned), dp=2 against 1 rank
# with the same per-rank work, exposed communication share at dp=2 and at tp=2, and the peer a user would
# pick instead (PyTorch DDP over gloo, 2 ranks pinned one per core, and its best 2-thread single process),
# measured side by side in one run. Needs an idle machine; prints a table and writes runs/bench/scaling.json.
#   scripts/bench_scaling.sh [steps] [allreduce]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GRIDTRAIN_BIN:-$here/build/src/cli/gridtrain}
steps=${1:-6}
algo=${2:-shm}
out=$here/runs/bench/scaling
mkdir -p "$out"
load=$(cut -d' ' -f1-3 /proc/loadavg)
pin="--bind-to core"
mpiexec -n 1 true 2>/dev/null
run() {  # name ranks overrides...
  local name=$1 n=$2; shift 2
  rm -rf "$out/$name"
  mpiexec -n "$n" $pin "$bin" train --config small train.steps="$steps" output.dir="$out/$name" \
    checkpoint.save_final=false output.log_every=1000 "$@" >"$out/$name.log" 2>&1 \
    || { echo "run $name failed:"; tail -5 "$out/$name.log"; exit 1; }
}
run r1 1
run dp2 2 parallel.dp=2 parallel.allreduce="$algo"
run tp2 2 parallel.tp=2
pt=""
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  rm -f "$out/pytorch.jsonl"
  /usr/bin/python3 "$here/scripts/bench_pytorch.py" --preset small --ddp 2 --steps "$steps" --out "$out/pytorch.jsonl" >/dev/null
  /usr/bin/python3 "$here/scripts/bench_pytorch.py" --preset small --threads 2 --steps "$steps" --out "$out/pytorch.jsonl" >/dev/null
  /usr/bin/python3 "$here/scripts/bench_pytorch.py" --preset small --threads 1 --steps "$steps" --out "$out/pytorch.jsonl" >/dev/null
  pt="$out/pytorch.jsonl"
fi
/usr/bin/python3 - "$out" "$load" "$pt" <<'PY'
import json, sys, os
out, load, pt = sys.argv[1], sys.argv[2], sys.argv[3]
s = {k: json.load(open(f"{out}/{k}/summary.json")) for k in ("r1", "dp2", "tp2")}
eff = s["dp2"]["tokens_per_s_per_rank"] / s["r1"]["tokens_per_s_per_rank"]
res = {"load_before": load, "load_after": open("/proc/loadavg").read().split()[:3],
       "tokens_per_s_1rank": s["r1"]["tokens_per_s"], "tokens_per_s_dp2": s["dp2"]["tokens_per_s"],
       "weak_scaling_efficiency_dp2": eff, "exposed_comm_share_dp2": s["dp2"]["exposed_comm_share"],
       "comm_dp_ms_dp2": s["dp2"]["comm_dp_ms"], "ms_per_step_dp2": s["dp2"]["ms_per_step"],
       "tokens_per_s_tp2": s["tp2"]["tokens_per_s"], "exposed_comm_share_tp2": s["tp2"]["exposed_comm_share"],
       "allreduce": s["dp2"]["allreduce"]}
print(f"1 rank        : {s['r1']['tokens_per_s']:8.0f} tokens/s  ({s['r1']['ms_per_step']:.0f} ms/step, MFU {100*s['r1']['mfu']:.1f}%)")
print(f"dp=2          : {s['dp2']['tokens_per_s']:8.0f} tokens/s  efficiency {100*eff:.1f}%  exposed comm {100*s['dp2']['exposed_comm_share']:.2f}% of the step ({s['dp2']['allreduce']})")
print(f"tp=2          : {s['tp2']['tokens_per_s']:8.0f} tokens/s  exposed comm {100*s['tp2']['exposed_comm_share']:.1f}% of the step")
if pt and os.path.exists(pt):
    for line in open(pt):
        r = json.loads(line)
        res[f"pytorch_{r['mode']}_tokens_per_s"] = r["tokens_per_s"]
        print(f"PyTorch {r['mode']:7s}: {r['tokens_per_s']:8.0f} tokens/s -> gridtrain dp=2 is {s['dp2']['tokens_per_s']/r['tokens_per_s']:.2f}x")
json.dump(res, open(f"{out}.json", "w"), indent=1)
print(f"load before: {load}; wrote {out}.json")
PY
