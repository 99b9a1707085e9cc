#!/usr/bin/env python3
"""Table and figure of scripts/bench_compress_interconnect.sh (experiment 1 of issue 11).

    /usr/bin/python3 scripts/plot_compress_interconnect.py OUT docs/experiments/compress_interconnect.png

Reads OUT/<rate>/<method>/{summary.json,load} (several OUT directories may be given before the PNG: their
figures are shown as rep1 / rep2); prints one markdown table (rates x methods: tokens/s, speed-up over dense
fp32 and over dense bf16 of the same rate and repetition, exposed DP communication share, wire bytes per step,
final loss, load) and draws tokens/s and the exposed communication share against the emulated rate."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RATES = ["none", "pcie4", "100gbit", "25gbit", "1gbit", "200mbit", "50mbit"]
GBIT = {"pcie4": 200, "100gbit": 100, "25gbit": 25, "1gbit": 1, "200mbit": 0.2, "50mbit": 0.05}
METHODS = [("fp32", "dense fp32"), ("bf16", "dense bf16"), ("topk4_ag", "top-k 4% all-gather"),
           ("topk4_sh", "top-k 4% shared-index"), ("topk4_ag_bf16v", "top-k 4% all-gather, bf16 values"),
           ("topk1_ag", "top-k 1% all-gather"), ("topk1_sh", "top-k 1% shared-index"),
           ("topk0.1_ag", "top-k 0.1% all-gather"), ("topk0.1_sh", "top-k 0.1% shared-index")]


def load(root):
    runs = {}
    for rate in RATES:
        for m, _ in METHODS:
            d = os.path.join(root, rate, m)
            try:
                s = json.load(open(os.path.join(d, "summary.json")))
            except (OSError, ValueError):
                continue
            ld = open(os.path.join(d, "load")).read().split()[0] if os.path.exists(os.path.join(d, "load")) else "?"
            runs[(rate, m)] = dict(tok=s["tokens_per_s"], share=s["exposed_comm_share"], ms=s["ms_per_step"],
                                   comm=s["comm_dp_ms"], wire=s.get("wire_bytes_per_step", 0),
                                   loss=s["final_loss"], load=ld)
    return runs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    roots, png = sys.argv[1:-1], sys.argv[-1]
    reps = [load(r) for r in roots]
    join = lambda vals: " / ".join(vals)  # noqa: E731
    print("| rate | method | tokens/s | x fp32 | x bf16 | ms/step | exposed DP comm ms | share | wire B/step | "
          "final loss | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for rate in RATES:
        for m, label in METHODS:
            got = [(rep.get((rate, m)), rep.get((rate, "fp32")), rep.get((rate, "bf16"))) for rep in reps]
            if not any(g[0] for g in got):
                continue
            def col(f):
                vals = [f(r, f32, b16) if r else "-" for r, f32, b16 in got]
                return vals[0] if len(set(vals)) == 1 else join(vals)  # deterministic figures (bytes, loss) once
            cells = [
                col(lambda r, a, b: "%.0f" % r["tok"]),
                col(lambda r, a, b: "%.2f" % (r["tok"] / a["tok"]) if a else "-"),
                col(lambda r, a, b: "%.2f" % (r["tok"] / b["tok"]) if b else "-"),
                col(lambda r, a, b: "%.0f" % r["ms"]),
                col(lambda r, a, b: "%.0f" % r["comm"]),
                col(lambda r, a, b: "%.0f%%" % (100 * r["share"])),
                col(lambda r, a, b: "%.0f" % r["wire"]),
                col(lambda r, a, b: "%.3f" % r["loss"]),
                col(lambda r, a, b: r["load"]),
            ]
            print("| %s | %s | %s |" % (rate, label, " | ".join(cells)))
    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    styles = {"fp32": ("k", "-", "o"), "bf16": ("0.5", "-", "s")}
    colors = {"4": "tab:blue", "1": "tab:orange", "0.1": "tab:green"}
    for m, label in METHODS:
        if m in styles:
            c, ls, mk = styles[m]
        else:
            dens = m[4:].split("_")[0]
            c, ls, mk = colors[dens], "--" if "_sh" in m else "-", "^" if "bf16v" in m else "v" if "_sh" in m else "o"
        xs, tok, share = [], [], []
        for rate in RATES:
            if rate not in GBIT:  # unshaped: a table row, no place on the rate axis
                continue
            vals = [rep[(rate, m)] for rep in reps if (rate, m) in rep]
            if vals:
                xs.append(GBIT[rate])
                tok.append(sum(v["tok"] for v in vals) / len(vals))
                share.append(100 * sum(v["share"] for v in vals) / len(vals))
        if xs:
            ax[0].plot(xs, tok, color=c, linestyle=ls, marker=mk, label=label)
            ax[1].plot(xs, share, color=c, linestyle=ls, marker=mk, label=label)
    for a, yl in ((ax[0], "tokens/s (dp=2, both ranks)"), (ax[1], "exposed DP communication, % of step")):
        a.set_xscale("log")
        a.set_xlabel("emulated link rate, Gbit/s per direction (pcie4 = 200)")
        a.set_ylabel(yl)
        a.grid(True, alpha=0.3)
    ax[0].legend(fontsize=7)
    fig.suptitle("tiny preset, dp=2 over emulated links (2 loaded cores: above ~1 Gbit/s the CPU, not the link, binds)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
