#!/usr/bin/env python3
"""Run summaries -> scaling table (CSV + Markdown) and plots (PNG).

  scripts/collect.py DIR [DIR ...] [--out PREFIX] [--title TEXT]

Every summary.json below the given directories is one point (a sweep directory from scripts/sweep.py, or any
set of run directories). Only runs with status "finished" enter the table; others are listed as skipped.
Efficiency is measured against the point with the fewest ranks: per-rank throughput divided by the baseline's
per-rank throughput. For weak scaling (fixed work per rank) that is the usual weak efficiency; for strong scaling
(fixed global batch) it equals speed-up / rank ratio, the usual strong efficiency.
Writes PREFIX.csv, PREFIX.md, PREFIX_throughput.png (throughput and efficiency against ranks, with the ideal
lines) and PREFIX_breakdown.png (step time split into forward, backward, optimizer, exposed communication and
the rest). PREFIX defaults to DIR/scaling for one directory.
"""
import argparse
import csv
import json
import os
import sys

COLUMNS = ["ranks", "layout", "tp", "pp", "dp", "zero", "tokens_per_s", "tokens_per_s_per_rank", "efficiency",
           "ms_per_step", "exposed_comm_share", "exposed_comm_share_slowest", "imbalance_share", "mfu", "forward_ms", "backward_ms", "optimizer_ms",
           "comm_exposed_ms", "other_ms", "global_batch_tokens", "final_loss", "run_dir"]


def find_summaries(dirs):
    found = []
    for d in dirs:
        for base, _, files in os.walk(d):
            if "summary.json" in files:
                found.append(os.path.join(base, "summary.json"))
    return sorted(found)


def sweep_kind(dirs):
    for d in dirs:
        p = os.path.join(d, "sweep.json")
        if os.path.exists(p):
            with open(p) as f:
                return json.load(f).get("kind", "")
    return ""


def load_rows(paths):
    rows, skipped = [], []
    for p in paths:
        try:
            with open(p) as f:
                s = json.load(f)
        except (OSError, ValueError) as e:
            skipped.append((p, f"unreadable: {e}"))
            continue
        if s.get("status") != "finished":
            skipped.append((p, f"status {s.get('status')!r}"))
            continue
        r = {k: s.get(k) for k in COLUMNS if k in s}
        r["ranks"] = int(s["world_size"])
        r["zero"] = int(s.get("zero", 0))
        r["layout"] = f"tp{s['tp']}xpp{s['pp']}" + (f" zero{r['zero']}" if r["zero"] else "")
        r["run_dir"] = os.path.dirname(p)
        parts = sum(float(s.get(k, 0.0)) for k in ("forward_ms", "backward_ms", "optimizer_ms", "comm_exposed_ms"))
        r["other_ms"] = max(0.0, float(s["ms_per_step"]) - parts)
        rows.append(r)
    rows.sort(key=lambda r: (r["ranks"], r["tp"], r["pp"], r["zero"]))
    if rows:
        base = rows[0]
        for r in rows:
            r["efficiency"] = r["tokens_per_s_per_rank"] / base["tokens_per_s_per_rank"]
    return rows, skipped


def fmt(v, nd=3):
    if isinstance(v, float):
        return f"{v:.{nd}g}" if abs(v) >= 1000 or v == 0 else f"{v:.{nd}f}"
    return str(v)


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def write_markdown(rows, path, title):
    lines = [f"### {title}", "",
             "| ranks | layout (tp x pp x dp, ZeRO stage) | tokens/s | tokens/s per rank | efficiency | ms/step "
             "| exposed comm | slowest rank's | MFU |",
             "|---:|:---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        zero = f" zero {r['zero']}" if r["zero"] else ""
        lines.append(f"| {r['ranks']} | {r['tp']} x {r['pp']} x {r['dp']}{zero} | {r['tokens_per_s']:.0f} "
                     f"| {r['tokens_per_s_per_rank']:.0f} | {r['efficiency']:.2f} | {r['ms_per_step']:.2f} "
                     f"| {100 * r['exposed_comm_share']:.1f}% | {100 * (r.get('exposed_comm_share_slowest') or 0):.1f}% "
                     f"| {100 * r['mfu']:.2f}% |")
    lines.append("")
    lines.append(f"Efficiency: per-rank throughput against the {rows[0]['ranks']}-rank point. Exposed comm: time "
                 "blocked in communication, mean over ranks, as a share of the step; slowest rank's: the same for "
                 "the rank that computes longest (the rest of the others' waiting is load imbalance).")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(rows, prefix, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = rows[0]
    ranks = sorted({r["ranks"] for r in rows})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for layout in sorted({r["layout"] for r in rows}):
        pts = [r for r in rows if r["layout"] == layout]
        ax1.plot([r["ranks"] for r in pts], [r["tokens_per_s"] for r in pts], "o-", label=layout)
        ax2.plot([r["ranks"] for r in pts], [r["efficiency"] for r in pts], "o-", label=layout)
    ideal = [base["tokens_per_s"] * n / base["ranks"] for n in ranks]
    ax1.plot(ranks, ideal, "k--", label="ideal")
    ax2.axhline(1.0, color="k", linestyle="--", label="ideal")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlabel("ranks")
        ax.grid(True, alpha=0.3)
        ax.legend()
    ax1.set_ylabel("tokens/s")
    ax1.set_title("throughput")
    ax2.set_ylabel("efficiency (per-rank throughput / baseline)")
    ax2.set_ylim(0, max(1.1, max(r["efficiency"] for r in rows) * 1.1))
    ax2.set_title("efficiency")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(prefix + "_throughput.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows) + 2), 4))
    labels = [f"{r['ranks']}: {r['tp']}x{r['pp']}x{r['dp']}" + (f" z{r['zero']}" if r["zero"] else "") for r in rows]
    bottom = [0.0] * len(rows)
    for key, name in (("forward_ms", "forward"), ("backward_ms", "backward"), ("optimizer_ms", "optimizer"),
                      ("comm_exposed_ms", "exposed comm"), ("other_ms", "other")):
        vals = [float(r.get(key) or 0.0) for r in rows]
        ax.bar(labels, vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("ms per step")
    ax.set_xlabel("ranks: tp x pp x dp")
    ax.set_title(title + ": step time")
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + "_breakdown.png", dpi=110)
    plt.close(fig)


def ensure_matplotlib(argv):
    """Plots need matplotlib; a python3 first on PATH (pyenv, venv) may lack it while the system one has it
    (Debian's python3-matplotlib, installed by scripts/setup.sh): then run again with the system interpreter."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    system = "/usr/bin/python3"
    if (os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system)
            and not os.environ.get("GT_COLLECT_REEXEC")):
        os.environ["GT_COLLECT_REEXEC"] = "1"
        os.execv(system, [system, os.path.abspath(__file__)] + list(argv))
    sys.exit("collect: error: matplotlib is missing (apt-get install python3-matplotlib, or use --no-plots)")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+")
    p.add_argument("--out", default="", help="output prefix (default DIR/scaling)")
    p.add_argument("--title", default="")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    if not a.no_plots:
        ensure_matplotlib(argv)
    paths = find_summaries(a.dirs)
    rows, skipped = load_rows(paths)
    for path, why in skipped:
        print(f"collect: skipped {path}: {why}", file=sys.stderr)
    if not rows:
        print(f"collect: error: no finished run summary under {' '.join(a.dirs)}", file=sys.stderr)
        return 1
    kind = sweep_kind(a.dirs)
    title = a.title or (f"{kind} scaling" if kind else "scaling")
    prefix = a.out or os.path.join(a.dirs[0], "scaling")
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    write_csv(rows, prefix + ".csv")
    write_markdown(rows, prefix + ".md", title)
    outputs = [prefix + ".csv", prefix + ".md"]
    if not a.no_plots:
        plot(rows, prefix, title)
        outputs += [prefix + "_throughput.png", prefix + "_breakdown.png"]
    with open(prefix + ".md") as f:
        print(f.read(), end="")
    print("collect: wrote " + " ".join(outputs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
