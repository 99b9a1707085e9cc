#!/usr/bin/env python3
"""Each kernel's share of a training step, from Nsight Compute's CSV of one metric (gpu__time_duration.sum) over a
whole run (scripts/gpu_check.sh, stage `kernels`).

  python3 scripts/ncu_table.py ncu.csv --steps 2

Kokkos kernels all launch through the same wrapper template (cuda_parallel_launch_*), so the name shown is the
functor's or, for a lambda, the function that holds it; cuBLAS kernels keep their own names. Times are per step:
the sum over the run divided by --steps (the first step's one-off launches included). Under ncu each kernel runs
serialised, so the sum is the device-busy time without overlap, not the step's wall time.
"""
import argparse, collections, csv, re, sys


def short_name(name):
    m = re.search(r"Parallel(For|Reduce|Scan)\w*<(.+)", name)
    if not m:
        return name[:90]
    inner = m.group(2)
    if "{lambda" in inner:  # a lambda: the function that holds it, without its parameter list
        fn = inner.split("::{lambda")[0]
        fn = re.sub(r"^(void|auto|[\w:<>]+\s)\s*", "", fn) if fn.startswith("void ") else fn
        depth, cut = 0, len(fn)
        for i, ch in enumerate(fn):  # the parameter list is the last top-level '(...)'
            if ch in "<":
                depth += 1
            elif ch in ">":
                depth -= 1
            elif ch == "(" and depth == 0:
                cut = i
        return ("lambda in " + fn[:cut])[:90]
    return inner.split(", Kokkos::")[0][:90]


def kind(name):
    if "Kokkos" in name:
        return "kokkos"
    if re.search(r"gemm|nvjet|xmma|cutlass|sm90_|sm80_|cublas", name, re.I):
        return "gemm (cuBLAS)"
    if "nccl" in name.lower():
        return "nccl"
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    lines = open(a.csv, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        print("ncu_table: no CSV header in", a.csv, "(ncu's own messages follow)")
        print("\n".join(lines[:20]))
        return 1
    rows = list(csv.DictReader(lines[start:]))
    per = collections.defaultdict(lambda: [0, 0.0])
    by_kind = collections.defaultdict(float)
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns = float(r["Metric Value"].replace(",", ""))
        k = short_name(r["Kernel Name"])
        per[k][0] += 1
        per[k][1] += ns
        by_kind[kind(r["Kernel Name"])] += ns
    total = sum(v[1] for v in per.values())
    if not total:
        print("ncu_table: no kernel durations in", a.csv)
        return 1
    s = a.steps
    print(f"device-busy time per step {total / s / 1e6:.3f} ms over {sum(v[0] for v in per.values()) / s:.0f} launches "
          f"(sum of serialised kernels, {s} steps averaged)")
    for k, ns in sorted(by_kind.items(), key=lambda x: -x[1]):
        print(f"  {k:16s} {ns / s / 1e6:9.3f} ms  {100 * ns / total:5.1f}%")
    print(f"{'ms/step':>9} {'share':>6} {'launches':>8}  kernel")
    for k, (n, ns) in sorted(per.items(), key=lambda x: -x[1][1])[: a.top]:
        print(f"{ns / s / 1e6:9.3f} {100 * ns / total:5.1f}% {n / s:8.1f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
