#!/usr/bin/env bash
# Live rebalancing benchmark (issue 25, docs/adaptive.md): RANKS ranks (4), one rank 2x slower; MODE=pp (default):
# pp = RANKS, pipeline blocks move; MODE=dp: dp = RANKS (pp = 1), 8 micro-batches in all, data-parallel shares move.
# RANKS=2 puts one rank on each core of a 2-core machine: the premise of the adapter's model (independent devices)
# holds there, while 4 ranks on 2 cores couple each rank's speed to its core-mate's (docs/adaptive.md).
#   scripts/bench_adapt.sh [OUT_DIR]    (env: BIN, MODE=pp, RANKS=4, STEPS=40, LAYERS=8, SLOW_RANK=1, FACTOR=2,
#                                        SLOWDOWN=hook (or process),
#                                        REPS=1, STATIC="2,2,2,2 3,1,2,2 2,1,3,2 2,1,2,3" (RANKS=2: "4,4 5,3 6,2"):
#                                        stage blocks (pp) or shares (dp))
# SLOWDOWN=hook (default): the test hook GRIDTRAIN_TEST_SLOW_RANK=r:k (the rank sleeps (k - 1) x its own compute
# each step, a device k times slower, from step 2 on); the hook lives in the straggler monitor, so "no adaptation"
# runs with parallel.adapt = monitor (one 8-byte all-gather per step more than off; the quiet pair below shows its
# cost). SLOWDOWN=process: a real one, a competing busy process on the slowed rank's core for the whole run (each
# rank pinned to core r mod the cores; the scheduler gives the two about half the core each, so about FACTOR 2,
# whatever FACTOR says; its waits, its memory traffic and the scheduler's time slices come with it, which the hook
# does not model). With RANKS=2 on 2 cores each rank has its own core.
# Runs, each REPS times, interleaved:
#   quiet_off, quiet_rebalance       nothing slow: adapt = off / rebalance (the adapter must cost nothing)
#   slow_monitor                     rank SLOW_RANK slowed, no adaptation (the partition the cost model chose)
#   slow_rebalance                   slowed, parallel.adapt = rebalance (moves blocks during the run)
#   quiet_full, slow_full            with FULL=1: parallel.adapt = full (the live re-layout's decision), nothing slow
#                                    and slowed (the planner models equal devices, so a straggler alone should not
#                                    switch: these show what its evaluations cost and what it decided)
#   slow_static_P                    slowed, parallel.stage_blocks = P (MODE=dp: parallel.dp_shares = P) fixed from
#                                    the start, for each P in STATIC: the best of them is "the best static found by
#                                    trying"
# Figures per run (OUT_DIR/figures.json and a table on stdout): tokens/s over steps 2..STEPS with the move's time
# included (the sum of the steps' slowest-rank times plus each move's logged seconds), the same over the first
# 30 steps, and the median step time of the last 10 steps (steady state).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$here/runs/bench_adapt/$(date -u +%Y%m%d-%H%M%S)}
bin=${BIN:-$here/build/src/cli/gridtrain}
steps=${STEPS:-40} layers=${LAYERS:-8} slow=${SLOW_RANK:-1} factor=${FACTOR:-2} reps=${REPS:-1}
ranks=${RANKS:-4}
case $ranks in
  4) static=${STATIC:-"2,2,2,2 3,1,2,2 2,1,3,2 2,1,2,3"} ;;
  2) static=${STATIC:-"4,4 5,3 6,2"} ;;
  *) echo "bench_adapt: RANKS must be 2 or 4" >&2; exit 2 ;;
esac
mode=${MODE:-pp}
slowdown=${SLOWDOWN:-hook}
case $slowdown in hook|process) ;; *) echo "bench_adapt: SLOWDOWN must be hook or process" >&2; exit 2 ;; esac
cores=$(nproc)
burner=""  # the competing process of the run in progress: never left behind
trap '[ -z "$burner" ] || kill "$burner" 2>/dev/null' EXIT
mkdir -p "$out"
common=(train --config tiny model.n_layer="$layers" train.micro_batch_size=4
        train.steps="$steps" output.peak_gflops=1 output.log_every=100 parallel.allreduce=mpi checkpoint.save_final=false)
static_key=parallel.stage_blocks
if [ "$mode" = dp ]; then
  common+=(parallel.dp="$ranks" parallel.pp=1 train.micro_batches=$((8 / ranks))); static_key=parallel.dp_shares
else common+=(parallel.pp="$ranks" train.micro_batches=8); fi

run() {  # run NAME SLOWED(0|1) overrides...
  local name=$1 slowed=$2; shift 2
  local dir=$out/$name args=() r
  rm -rf "$dir"
  burner=""
  for r in $(seq 0 $((ranks - 1))); do
    [ $r -gt 0 ] && args+=(:)
    args+=(-n 1)
    if [ $slowdown = hook ]; then
      [ "$slowed" = 1 ] && [ $r = "$slow" ] && args+=(-env GRIDTRAIN_TEST_SLOW_RANK "$slow:$factor")
      args+=("$bin")
    else
      args+=(taskset -c $((r % cores)) "$bin")
    fi
    args+=("${common[@]}" output.dir="$dir" "$@")
  done
  if [ $slowdown = process ] && [ "$slowed" = 1 ]; then
    taskset -c $((slow % cores)) bash -c 'while :; do :; done' &
    burner=$!
  fi
  local rc=0
  timeout -k 5 600 mpiexec "${args[@]}" >"$dir.log" 2>&1 || rc=$?
  [ -z "$burner" ] || { kill "$burner"; wait "$burner" 2>/dev/null || true; burner=""; }
  [ $rc = 0 ] || { echo "bench_adapt: $name failed: $(tail -3 "$dir.log")" >&2; exit 1; }
  echo "bench_adapt: $name done"
}

for rep in $(seq "$reps"); do
  run "quiet_off.$rep" 0 parallel.adapt=off
  run "quiet_rebalance.$rep" 0 parallel.adapt=rebalance
  run "slow_monitor.$rep" 1 parallel.adapt=monitor
  run "slow_rebalance.$rep" 1 parallel.adapt=rebalance
  if [ "${FULL:-0}" = 1 ]; then
    run "quiet_full.$rep" 0 parallel.adapt=full
    run "slow_full.$rep" 1 parallel.adapt=full
  fi
  for p in $static; do run "slow_static_$p.$rep" 1 parallel.adapt=monitor "$static_key=$p"; done
done

python3 - "$out" "$steps" <<'PY'
import glob, json, os, re, statistics, sys
out, steps = sys.argv[1], int(sys.argv[2])
runs = {}
for log in sorted(glob.glob(out + "/*.log")):
    name, rep = os.path.basename(log)[:-4].rsplit(".", 1)
    rows = [json.loads(l) for l in open(log[:-4] + "/metrics.jsonl")]
    text = open(log).read()
    moves = [float(m) for m in re.findall(r"the move took ([0-9.]+) s", text)]
    decisions = [r["adapt"] for r in rows if "adapt" in r]
    tokens = json.load(open(log[:-4] + "/summary.json"))["global_batch_tokens"]
    def tok_s(last):  # steps 2..last, the moves made before `last` included
        ms = sum(r["ms_max"] for r in rows if 2 <= r["step"] <= last)
        moving = [d for d in decisions if d["action"] in ("move", "switch", "switch_back")]  # each logs its time
        moved = sum(t for t, d in zip(moves, moving) if d["step"] < last)
        return tokens * (last - 1) / (ms / 1e3 + moved)
    runs.setdefault(name, []).append({
        "tokens_per_s": tok_s(steps), "tokens_per_s_first30": tok_s(min(30, steps)),
        "steady_ms": statistics.median(r["ms_max"] for r in rows[-10:]), "move_s": moves, "decisions": decisions})
fig = {n: {"reps": v, "tokens_per_s": statistics.median(x["tokens_per_s"] for x in v),
           "tokens_per_s_first30": statistics.median(x["tokens_per_s_first30"] for x in v),
           "steady_ms": statistics.median(x["steady_ms"] for x in v)} for n, v in runs.items()}
statics = {n: f for n, f in fig.items() if n.startswith("slow_static_")}
best = max(statics, key=lambda n: statics[n]["tokens_per_s"]) if statics else None
summary = {"best_static": best}
if best:
    b = fig[best]["tokens_per_s"]
    for n in ("slow_monitor", "slow_rebalance", "slow_full"):
        if n in fig:
            summary[n + "_over_best_static"] = fig[n]["tokens_per_s"] / b
            summary[n + "_first30_over_best_static"] = fig[n]["tokens_per_s_first30"] / fig[best]["tokens_per_s_first30"]
for n in ("quiet_rebalance", "quiet_full"):
    if "quiet_off" in fig and n in fig:
        summary[n + "_over_off"] = fig[n]["tokens_per_s"] / fig["quiet_off"]["tokens_per_s"]
json.dump({"runs": fig, "summary": summary}, open(out + "/figures.json", "w"), indent=1)
print(f"{'run':28s} {'tok/s':>9s} {'tok/s 1-30':>10s} {'steady ms':>9s}  moves")
for n in sorted(fig):
    f = fig[n]
    mv = [f"{d['step']}:{d.get('from_blocks', d.get('from_shares', d.get('from_layout')))}->"
          f"{d.get('to_blocks', d.get('to_shares', d.get('to_layout')))}"
          for x in f["reps"] for d in x["decisions"] if d["action"] in ("move", "switch", "switch_back")]
    print(f"{n:28s} {f['tokens_per_s']:9.0f} {f['tokens_per_s_first30']:10.0f} {f['steady_ms']:9.1f}  {' '.join(mv)}")
for k, v in summary.items():
    print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
print("figures:", out + "/figures.json")
PY
