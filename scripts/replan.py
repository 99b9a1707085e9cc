#!/usr/bin/env python3
"""Re-plan a run's layout for the ranks that remain after a loss, keeping its global batch (issue 25).

    scripts/replan.py --bin GRIDTRAIN --config RUN_DIR/config.toml --ranks N [--cluster NAME]

Reads the run's resolved configuration (config.toml, written by the trainer at start): the global batch
B = train.micro_batch_size x train.micro_batches x parallel.dp, the precision, ZeRO stage and recompute. Asks
`gridtrain plan` for the best layout of N devices with global batch B and the same micro-batch size, and when
none fits (B not divisible by the data-parallel degrees N allows, or the memory), of N - 1, N - 2, ... devices:
the run continues on the largest number of the remaining ranks that keeps the global batch. Layouts the trainer
cannot be given by these keys alone (context parallelism, virtual stages) are passed over.

Prints one line `RANKS TP PP DP MICRO_BATCHES` (the planner's predicted step time and its layout go to stderr);
exits 1 with `replan.py: error: ...` when no number of ranks fits.
"""
import argparse
import json
import subprocess
import sys
import tomllib


def fail(msg):
    print(f"replan.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def best_layout(args, cfg, ranks, batch):
    t, p = cfg["train"], cfg["parallel"]
    cmd = [args.bin, "plan", "--config", args.config, "--cluster", args.cluster, "--devices", str(ranks),
           "--global-batch", str(batch), "--micro-batch", str(t["micro_batch_size"]),
           "--precision", t.get("precision", "fp32"), "--zero", str(p.get("zero", 0)),
           "--recompute", t.get("recompute", "none"), "--top", "50", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None  # nothing fits these ranks (the planner's line says why)
    for fit in json.loads(r.stdout)["fits"]:
        lay = fit["layout"]
        if lay.get("cp", 1) == 1 and lay.get("virtual_stages", 1) == 1 and not lay.get("sequence_parallel"):
            return lay, fit["time_ms"]["step"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--config", required=True, help="the run's config.toml")
    ap.add_argument("--ranks", type=int, required=True, help="ranks that remain")
    ap.add_argument("--cluster", default="cpu-2core", help="cluster description for the planner")
    args = ap.parse_args()
    try:
        with open(args.config, "rb") as f:
            cfg = tomllib.load(f)
        t, p = cfg["train"], cfg["parallel"]
        batch = int(t["micro_batch_size"]) * int(t["micro_batches"]) * int(p["dp"])
    except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError) as e:
        fail(f"cannot read the global batch from {args.config}: {e}")
    if args.ranks < 1:
        fail(f"--ranks {args.ranks}: no rank remains")
    for n in range(args.ranks, 0, -1):
        found = best_layout(args, cfg, n, batch)
        if found:
            lay, step_ms = found
            m = batch // (int(t["micro_batch_size"]) * lay["dp"])
            print(f"replan.py: {n} of {args.ranks} ranks: tp {lay['tp']} pp {lay['pp']} dp {lay['dp']}, "
                  f"{m} micro-batches of {t['micro_batch_size']} (global batch {batch} kept; planner: "
                  f"{step_ms:.1f} ms/step on {args.cluster})", file=sys.stderr)
            print(n, lay["tp"], lay["pp"], lay["dp"], m)
            return
    fail(f"no layout of 1..{args.ranks} ranks keeps the global batch {batch} (micro-batch {t['micro_batch_size']})")


if __name__ == "__main__":
    main()
