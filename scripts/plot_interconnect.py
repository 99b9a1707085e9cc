#!/usr/bin/env python3
"""Table and figure of scripts/bench_interconnect.sh's runs.

    python3 scripts/plot_interconnect.py runs/interconnect docs/experiments/interconnect.png [TITLE]

Reads OUT/rep*/<rate>/{allreduce.json,train/summary.json}; prints a markdown table (one row per rate, every
repetition's figure separated by '/') and draws bus bandwidth of a 64 MiB all-reduce and the trainer's exposed
communication share against the emulated rate."""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["none", "pcie4", "100gbit", "25gbit", "1gbit", "200mbit", "100mbit", "50mbit"]
NOMINAL_GBS = {"pcie4": 25.0, "100gbit": 12.5, "25gbit": 3.125, "1gbit": 0.125, "200mbit": 0.025, "100mbit": 0.0125,
               "50mbit": 0.00625}


def load(root):
    runs = {}
    for rep in sorted(glob.glob(os.path.join(root, "rep*"))):
        for rate in ORDER:
            d = os.path.join(rep, rate)
            try:
                ar = json.load(open(os.path.join(d, "allreduce.json")))
                tr = json.load(open(os.path.join(d, "train", "summary.json")))
            except (OSError, ValueError):
                continue
            rows = [r for r in ar["rows"] if r["algo"] == "mpi"]
            big = max(rows, key=lambda r: r["bytes"])
            mid = min(rows, key=lambda r: abs(r["bytes"] - (4 << 20)))  # the trainer's bucket order of size
            runs.setdefault(rate, []).append({
                "busbw_big": big["busbw_GBs"], "busbw_mid": mid["busbw_GBs"], "big_mib": big["bytes"] >> 20,
                "load": ar.get("loadavg", "?").split()[0],
                "tok_s": tr["tokens_per_s"], "share": tr["exposed_comm_share"], "ms": tr["ms_per_step"],
                "compute_ms": tr["compute_ms"], "comm_ms": tr["comm_dp_ms"], "params": tr["params"]})
    return runs


def main():
    root, png = sys.argv[1], sys.argv[2]
    runs = load(root)
    rates = [r for r in ORDER if r in runs]
    if not rates:
        sys.exit("plot_interconnect: no runs under " + root)

    def col(rate, key, fmt):
        return " / ".join(fmt.format(x[key]) for x in runs[rate])

    print("| rate | nominal GB/s | busbw 4 MiB GB/s | busbw largest GB/s | tokens/s | step ms | compute ms | "
          "exposed comm ms | exposed comm share | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rates:
        nominal = NOMINAL_GBS.get(r, float("nan"))
        print(f"| {r} | {nominal:g} | {col(r, 'busbw_mid', '{:.3f}')} | {col(r, 'busbw_big', '{:.3f}')} | "
              f"{col(r, 'tok_s', '{:.0f}')} | {col(r, 'ms', '{:.0f}')} | {col(r, 'compute_ms', '{:.0f}')} | "
              f"{col(r, 'comm_ms', '{:.0f}')} | {col(r, 'share', '{:.1%}')} | {col(r, 'load', '{}')} |")

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    x = range(len(rates))
    for i, r in enumerate(rates):
        a.scatter([i] * len(runs[r]), [v["busbw_big"] for v in runs[r]], color="C0")
        if r in NOMINAL_GBS:
            a.scatter([i], [NOMINAL_GBS[r]], marker="_", s=400, color="C3")
        b.scatter([i] * len(runs[r]), [100 * v["share"] for v in runs[r]], color="C1")
    a.set_yscale("log")
    a.set_xticks(list(x), rates)
    a.set_ylabel("bus bandwidth, largest all-reduce (GB/s)")
    a.set_title("MPI all-reduce, 2 ranks (dots) vs link rate (red)")
    b.set_xticks(list(x), rates)
    b.set_ylabel("exposed communication share of the step (%)")
    b.set_title((sys.argv[3] if len(sys.argv) > 3 else "dp=2") + ", dense fp32 all-reduce")
    b.set_ylim(bottom=0)
    fig.suptitle("Emulated interconnect (tbf on veth, 2 namespaces), AMD EPYC Zen 5, 2 cores, loaded", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
