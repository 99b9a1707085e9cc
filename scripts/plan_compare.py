#!/usr/bin/env python3
"""Predicted (gridtrain plan) against measured (summary.json) for every run directory under OUT, as a markdown
table; with --doc, the table replaces the block between `<!-- plan_compare:KIND begin -->` and `... end -->` in
that file (docs/planner.md). scripts/plan_measure.sh calls it; it can be rerun on existing runs.

usage: scripts/plan_compare.py GRIDTRAIN OUT --kind memory|time [--cluster cpu-2core] [--baseline-run DIR]
                               [--doc docs/planner.md] [--block NAME] [--note TEXT]
  memory: peak RSS (the largest rank's) against the planner's memory of the most-loaded stage plus the process
          baseline: the peak RSS of --baseline-run (a run of a model too small to matter) less that run's own
          prediction; measured once and added to every row.
  time:   ms_per_step (the slowest rank's, first step left out) against the planner's step time.
"""
import argparse
import json
import os
import re
import subprocess
import sys

MB = 1048576.0


def predict(binary, run_dir, cluster):
    """The planner's entry for exactly the layout the run used (None, why when it was rejected)."""
    s = json.load(open(os.path.join(run_dir, "summary.json")))
    b, m, dp = s["micro_batch_size"], s["micro_batches"], s["dp"]
    cmd = [binary, "plan", "--config", os.path.join(run_dir, "config.toml"), "--cluster", cluster,
           "--devices", str(s["world_size"]), "--global-batch", str(b * m * dp), "--tp", str(s["tp"]),
           "--pp", str(s["pp"]), "--micro-batch", str(b), "--precision", s.get("precision", "fp32"),
           "--zero", str(s.get("zero", 0)), "--recompute", "none", "--tp-across-nodes", "--json"]
    if s.get("schedule") == "gpipe":
        cmd.append("--gpipe")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return s, None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "plan failed"
    j = json.loads(out.stdout)
    for f in j["fits"] + j["rejected"]:
        l = f["layout"]
        if l["micro_batch"] == b and l["micro_batches"] == m and l["dp"] == dp and "memory_gb" in f:
            return s, f, ""
    return s, None, "layout not in the plan"


def layout_name(s):
    parts = [f"tp{s['tp']} pp{s['pp']} dp{s['dp']}", f"b{s['micro_batch_size']} m{s['micro_batches']}"]
    if s.get("zero", 0):
        parts.append(f"zero{s['zero']}")
    if s.get("schedule") == "gpipe":
        parts.append("gpipe")
    if s.get("precision", "fp32") != "fp32":
        parts.append(s["precision"])
    return " ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("--kind", choices=["memory", "time"], required=True)
    ap.add_argument("--cluster", default="cpu-2core")
    ap.add_argument("--baseline-run", default="")
    ap.add_argument("--doc", default="")
    ap.add_argument("--note", default="")
    ap.add_argument("--block", default="", help="name of the doc block (default: the kind)")
    a = ap.parse_args()

    baseline_mb = 0.0
    if a.kind == "memory":
        if not a.baseline_run:
            sys.exit("plan_compare: --kind memory needs --baseline-run")
        s, f, why = predict(a.binary, a.baseline_run, a.cluster)
        if f is None:
            sys.exit(f"plan_compare: baseline run: {why}")
        baseline_mb = s["peak_rss_mb"] - f["memory_gb"]["total"] * 1e9 / MB
    dirs = sorted(d for d in os.listdir(a.out) if os.path.isfile(os.path.join(a.out, d, "summary.json"))
                  and os.path.join(a.out, d) != os.path.normpath(a.baseline_run))
    rows, errs = [], []
    if a.kind == "memory":
        rows.append("| run | ranks | layout | planner MiB (states + activations + buffers) | + baseline | predicted MiB | "
                    "measured peak RSS MiB | error |")
    else:
        rows.append("| run | ranks | layout | predicted ms (compute / TP / PP / DP / bubble / optimizer) | "
                    "measured ms | error |")
    rows.append("|" + "---|" * (8 if a.kind == "memory" else 6))
    for d in dirs:
        s, f, why = predict(a.binary, os.path.join(a.out, d), a.cluster)
        if f is None:
            rows.append(f"| {d} | {s['world_size']} | {layout_name(s)} | {why} | | | | |")
            continue
        if a.kind == "memory":
            mem = f["memory_gb"]
            plan_mb = mem["total"] * 1e9 / MB
            pred = plan_mb + baseline_mb
            meas = s["peak_rss_mb"]
            err = (pred - meas) / meas
            split = f"{mem['params'] * 1e9 / MB + mem['grads'] * 1e9 / MB + mem['optimizer'] * 1e9 / MB:.1f} + " \
                    f"{mem['activations'] * 1e9 / MB:.1f} + {(mem['workspace'] + mem['comm_buffers']) * 1e9 / MB:.1f}"
            rows.append(f"| {d} | {s['world_size']} | {layout_name(s)} | {plan_mb:.1f} ({split}) | {baseline_mb:.1f} | "
                        f"{pred:.1f} | {meas:.1f} | {err * 100:+.1f}% |")
        else:
            t = f["time_ms"]
            pred, meas = t["step"], s["ms_per_step"]
            err = (pred - meas) / meas
            rows.append(f"| {d} | {s['world_size']} | {layout_name(s)} | {pred:.1f} ({t['compute']:.0f} / {t['tp']:.1f} / "
                        f"{t['pp']:.1f} / {t['dp']:.1f} / {t['bubble']:.0f} / {t['optimizer']:.1f}) | {meas:.1f} | "
                        f"{err * 100:+.1f}% |")
        errs.append(abs(err))
    summary = (f"{len(errs)} runs: mean |error| {100 * sum(errs) / len(errs):.1f}%, max {100 * max(errs):.1f}%"
               if errs else "no runs")
    if a.kind == "memory":
        summary += f"; baseline {baseline_mb:.1f} MiB (from {os.path.basename(os.path.normpath(a.baseline_run))})"
    text = "\n".join(rows) + "\n\n" + summary + "\n"
    if a.note:
        text = a.note + "\n\n" + text
    print(text)
    if a.doc:
        doc = open(a.doc).read()
        block = a.block or a.kind
        begin, end = f"<!-- plan_compare:{block} begin -->", f"<!-- plan_compare:{block} end -->"
        if begin not in doc or end not in doc:
            sys.exit(f"plan_compare: {a.doc} has no {begin} ... {end} block")
        doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: begin + "\n" + text + end, doc, flags=re.S)
        open(a.doc + ".tmp", "w").write(doc)
        os.replace(a.doc + ".tmp", a.doc)


if __name__ == "__main__":
    main()
