#!/usr/bin/env python3
"""Plot of `gridtrain plan --plot OUT.png`: the predicted scaling curve (best layout's tokens/s at each device
count against ideal linear scaling from the smallest point) and the step-time split of the best layouts.
usage: plan_plot.py PLAN.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    plan = json.load(open(sys.argv[1]))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    pts = plan["scaling"]
    if pts:
        n = [p["devices"] for p in pts]
        tps = [p["best"]["tokens_per_s"] for p in pts]
        ax1.plot(n, tps, "o-", label="predicted (best layout)")
        ax1.plot(n, [tps[0] * x / n[0] for x in n], "k--", lw=0.8, label="ideal")
        for x, y, p in zip(n, tps, pts):
            lay = p["best"]["layout"]
            ax1.annotate(f"{lay['tp']}x{lay['pp']}x{lay['dp']}", (x, y), fontsize=7, xytext=(3, -10),
                         textcoords="offset points")
        ax1.set_xscale("log", base=2)
        ax1.set_yscale("log")
        ax1.set_xlabel("devices")
        ax1.set_ylabel("tokens/s")
        ax1.set_title(f"{plan['cluster']}, global batch {plan['global_batch']}", fontsize=9)
        ax1.legend(fontsize=8)
    top = plan["fits"][:10]
    parts = ["compute", "tp", "pp", "dp", "bubble", "optimizer", "overhead"]
    left = [0.0] * len(top)
    for part in parts:
        vals = [c["time_ms"][part] for c in top]
        ax2.barh(range(len(top)), vals, left=left, label=part)
        left = [a + b for a, b in zip(left, vals)]
    ax2.set_yticks(range(len(top)))
    ax2.set_yticklabels([
        f"tp{c['layout']['tp']} pp{c['layout']['pp']} dp{c['layout']['dp']} b{c['layout']['micro_batch']} "
        f"z{c['layout']['zero']} {c['layout']['precision']} {c['layout']['recompute'][:3]}" for c in top],
        fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlabel("predicted step time, ms")
    ax2.set_title(f"best layouts on {plan['devices']} devices", fontsize=9)
    ax2.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
