#!/usr/bin/env bash
# Weak scaling 1 -> 2 ranks on the `small` preset (issue #3): one rank per core (pinned), dp=2 against 1 rank
# with the same per-rank work, exposed communication share at dp=2 and at tp=2, and the peer a user would
# pick instead (PyTorch DDP over gloo, 2 ranks pinned one per core, and its best 2-thread single process),
# measured side by side in one run. Needs an idle machine; prints a table and writes runs/bench/scaling.json.
#   scripts/bench_scaling.sh [steps] [reps]
# The configurations run in turns, `reps` rounds (default 3), and medians are reported: on the shared 2-vCPU
# VM one run's step time swings by +-10% from run to run, more than the effects measured here. "pair" runs
# two independent 1-rank jobs at once, one per core: the throughput two cores give with no communication at
# all, i.e. the ceiling of any 2-rank layout on this machine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GRIDTRAIN_BIN:-$here/build/src/cli/gridtrain}
steps=${1:-8}
reps=${2:-3}
out=$here/runs/bench/scaling
rm -rf "$out"
mkdir -p "$out"
load=$(cut -d' ' -f1-3 /proc/loadavg)
common=(train --config small train.steps="$steps" checkpoint.save_final=false output.log_every=1000)
run() {  # name ranks overrides...
  local name=$1 n=$2; shift 2
  mpiexec -n "$n" --bind-to core "$bin" "${common[@]}" output.dir="$out/$name" "$@" >"$out/$name.log" 2>&1 \
    || { echo "run $name failed:"; tail -5 "$out/$name.log"; exit 1; }
}
pair() {  # name: two independent single-rank runs at once, pinned to cores 0 and 1
  local name=$1
  taskset -c 0 "$bin" "${common[@]}" output.dir="$out/${name}a" >"$out/${name}a.log" 2>&1 &
  local p0=$!
  taskset -c 1 "$bin" "${common[@]}" output.dir="$out/${name}b" >"$out/${name}b.log" 2>&1 &
  local p1=$!
  wait $p0 && wait $p1 || { echo "pair $name failed"; exit 1; }
}
for r in $(seq 1 "$reps"); do
  run "r1_$r" 1
  run "dp2ring_$r" 2 parallel.dp=2 parallel.allreduce=ring
  run "dp2shm_$r" 2 parallel.dp=2 parallel.allreduce=shm
  run "tp2_$r" 2 parallel.tp=2
  pair "pair_$r"
done

pt=""
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  # PyTorch runs as installed and with OPENBLAS_CORETYPE=SkylakeX (Debian's OpenBLAS falls back to slow kernels
  # on CPUs newer than it knows; a user tuning the peer would set it), so the peer gets its best figure.
  rm -f "$out/pytorch.jsonl"
  for core in default SkylakeX; do
    env=(); [ $core != default ] && env=(OPENBLAS_CORETYPE=$core)
    for mode in "--ddp 2" "--threads 2" "--threads 1"; do
      env "${env[@]}" /usr/bin/python3 "$here/scripts/bench_pytorch.py" --preset small $mode --steps "$steps" \
        --out "$out/pytorch_$core.jsonl" >/dev/null
    done
    sed "s/\"mode\": \"\([a-z0-9]*\)\"/\"mode\": \"\1_$core\"/" "$out/pytorch_$core.jsonl" >>"$out/pytorch.jsonl"
    rm -f "$out/pytorch_$core.jsonl"
  done
  pt="$out/pytorch.jsonl"
fi
/usr/bin/python3 - "$out" "$load" "$pt" "$reps" <<'PY'
import json, sys, os, statistics as st
out, load, pt, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def summ(name): return json.load(open(f"{out}/{name}/summary.json"))
def med(prefix, key): return st.median(summ(f"{prefix}_{r}")[key] for r in range(1, reps + 1))
res = {"load_before": load, "reps": reps}
tok1 = med("r1", "tokens_per_s")
pair = st.median(summ(f"pair_{r}a")["tokens_per_s"] + summ(f"pair_{r}b")["tokens_per_s"] for r in range(1, reps + 1))
res.update(tokens_per_s_1rank=tok1, tokens_per_s_pair=pair, pair_efficiency=pair / 2 / tok1)
print(f"1 rank          : {tok1:8.0f} tokens/s  (median of {reps}; runs: "
      + " ".join(f"{summ(f'r1_{r}')['tokens_per_s']:.0f}" for r in range(1, reps + 1)) + ")")
print(f"pair (no comm)  : {pair:8.0f} tokens/s  = {100 * pair / 2 / tok1:.1f}% per rank of 1 rank (two independent runs)")
for name in ("dp2ring", "dp2shm", "tp2"):
    tok, share = med(name, "tokens_per_s"), med(name, "exposed_comm_share")
    slow, imb = med(name, "exposed_comm_share_slowest"), med(name, "imbalance_share")
    eff = tok / 2 / tok1
    res[f"tokens_per_s_{name}"], res[f"exposed_comm_share_{name}"] = tok, share
    res[f"exposed_comm_share_slowest_{name}"], res[f"imbalance_share_{name}"] = slow, imb
    res[f"efficiency_{name}"], res[f"efficiency_vs_pair_{name}"] = eff, tok / pair
    print(f"{name:15s} : {tok:8.0f} tokens/s  efficiency {100 * eff:.1f}% ({100 * tok / pair:.1f}% of the pair)"
          f"  exposed comm {100 * share:.2f}% of the step (slowest rank {100 * slow:.2f}%, imbalance {100 * imb:.2f}%)"
          f"  (runs: "
          + " ".join(f"{summ(f'{name}_{r}')['tokens_per_s']:.0f}/{100 * summ(f'{name}_{r}')['exposed_comm_share']:.1f}%"
                     for r in range(1, reps + 1)) + ")")
best = max(res["tokens_per_s_dp2ring"], res["tokens_per_s_dp2shm"])
if pt and os.path.exists(pt):
    for line in open(pt):
        r = json.loads(line)
        res[f"pytorch_{r['mode']}_tokens_per_s"] = r["tokens_per_s"]
        print(f"PyTorch {r['mode']:18s}: {r['tokens_per_s']:8.0f} tokens/s -> gridtrain dp=2 (best algorithm) is "
              f"{best / r['tokens_per_s']:.2f}x")
res["load_after"] = open("/proc/loadavg").read().split()[:3]
json.dump(res, open(f"{out}.json", "w"), indent=1)
print(f"load before: {load}, after: {' '.join(res['load_after'])}; wrote {out}.json")
PY
