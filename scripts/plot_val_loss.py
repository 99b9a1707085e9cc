#!/usr/bin/python3
"""Validation loss against steps for runs of scripts/run_compress_experiments.sh, with a table.
   plot_val_loss.py RUNS_DIR OUT.png TITLE NAME[=LABEL]...   (prints a markdown table of the final figures)"""
import json
import sys


def load(d):
    steps, val = [], []
    for line in open(d + "/metrics.jsonl"):
        m = json.loads(line)
        if "val_loss" in m:
            steps.append(m["step"])
            val.append(m["val_loss"])
    return steps, val, json.load(open(d + "/summary.json"))


def main():
    runs, out, title = sys.argv[1], sys.argv[2], sys.argv[3]
    names = [a.split("=", 1) if "=" in a else (a, a) for a in sys.argv[4:]]
    data = {n: load(f"{runs}/{n}") for n, _ in names}
    print("| run | val loss (final) | best val loss | final train loss | wire MB/step | ratio | skipped FLOPs | ms/step (loaded) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, label in names:
        st, v, s = data[n]
        wire = s.get("wire_bytes_per_step")
        wire_s = "-" if wire is None else f"{wire / 1e6:.3f}"
        ratio_s = "-" if wire is None else f"{s['compression_ratio']:.1f}"
        print(f"| {label} | {v[-1]:.4f} | {min(v):.4f} | {s['final_loss']:.4f} | {wire_s} | {ratio_s} | "
              f"{s.get('sparse_skipped_flop_fraction', 0):.3f} | {s['ms_per_step']:.0f} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not available: no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, label in names:
        st, v, _ = data[n]
        ax.plot(st, v, marker="o", ms=3, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
