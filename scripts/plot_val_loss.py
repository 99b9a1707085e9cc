#!/usr/bin/python3
"""Validation loss against steps for runs of scripts/run_compress_experiments.sh, with a table.
   plot_val_loss.py [--wall] RUNS_DIR OUT.png TITLE NAME[=LABEL]...   (prints a markdown table of the final figures)
--wall: against wall time instead, the running sum of every step's ms_max (the slowest rank's step, as the
metrics log it for every step), so validation passes and start-up are left out."""
import json
import sys


def load(d, wall):
    steps, val, t, prev = [], [], 0.0, 0
    for line in open(d + "/metrics.jsonl"):
        m = json.loads(line)
        if wall and m["step"] != prev + 1:
            sys.exit(f"{d}: step {m['step']} follows {prev}: --wall needs every step logged (output.log_every=1)")
        prev = m["step"]
        t += m["ms_max"] / 1000.0
        if "val_loss" in m:
            steps.append(t if wall else m["step"])
            val.append(m["val_loss"])
    summary = json.load(open(d + "/summary.json"))
    summary["wall_s"] = t
    return steps, val, summary


def main():
    args = sys.argv[1:]
    wall = bool(args) and args[0] == "--wall"
    if wall:
        args = args[1:]
    runs, out, title = args[0], args[1], args[2]
    names = [a.split("=", 1) if "=" in a else (a, a) for a in args[3:]]
    data = {n: load(f"{runs}/{n}", wall) for n, _ in names}
    print("| run | val loss (final) | best val loss | final train loss | wire MB/step | ratio | skipped FLOPs | ms/step (loaded) "
          "| sum of step times s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, label in names:
        st, v, s = data[n]
        wire = s.get("wire_bytes_per_step")
        wire_s = "-" if wire is None else f"{wire / 1e6:.3f}"
        ratio_s = "-" if wire is None else f"{s['compression_ratio']:.1f}"
        print(f"| {label} | {v[-1]:.4f} | {min(v):.4f} | {s['final_loss']:.4f} | {wire_s} | {ratio_s} | "
              f"{s.get('sparse_skipped_flop_fraction', 0):.3f} | {s['ms_per_step']:.0f} | {s['wall_s']:.1f} |")
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
    ax.set_xlabel("wall time, s (sum of step times)" if wall else "step")
    ax.set_ylabel("validation loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
