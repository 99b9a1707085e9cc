#!/usr/bin/python3
"""Table of scripts/bench_precision.sh's runs: per round, gridtrain bf16 vs fp32 and gridtrain vs PyTorch in CPU
time per step (and wall time), MFU, activation memory (ledger; peak RSS - state ledger - baseline), dp=2 weak
scaling in bf16.
  scripts/bench_precision_table.py OUT_DIR ROUNDS STEPS   -> OUT_DIR/precision.json and markdown on stdout
"""
import json, sys

BASELINE_MB = 58.4  # process RSS of a run of a few-kB model (docs/planner.md)
out, rounds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gt = lambda n: json.load(open(f"{out}/{n}/summary.json"))
pt = lambda n: json.loads(open(f"{out}/{n}.jsonl").read().splitlines()[-1])
cpu = lambda n: float(open(f"{out}/{n}.cpu").read())
gt_cpu_ms = lambda n: 1e3 * (cpu(n) - cpu(n + "_1step")) / steps
rows = []
for preset, rs in (("small", range(1, rounds + 1)), ("gpt2", [1])):
    for r in rs:
        n32, n16 = f"gt_{preset}_fp32_r{r}", f"gt_{preset}_bf16_r{r}"
        g32, g16 = gt(n32), gt(n16)
        p32, p16 = pt(f"pt_{preset}_fp32_r{r}"), pt(f"pt_{preset}_bf16_r{r}")
        c32, c16 = gt_cpu_ms(n32), gt_cpu_ms(n16)
        act = lambda g: g["peak_rss_mb"] - g["analytic_state_mb"] - BASELINE_MB
        # MFU from CPU time: model FLOPs per step over (CPU seconds per step x the run's own peak)
        flops = g32["flops_per_token"] * g32["global_batch_tokens"]
        rows.append({"preset": preset, "round": r,
                     "gt_fp32_cpu_ms": c32, "gt_bf16_cpu_ms": c16,
                     "pt_fp32_cpu_ms": p32["cpu_ms_per_step"], "pt_bf16_cpu_ms": p16["cpu_ms_per_step"],
                     "gt_fp32_wall_ms": g32["ms_per_step"], "gt_bf16_wall_ms": g16["ms_per_step"],
                     "pt_fp32_wall_ms": p32["ms_per_step"], "pt_bf16_wall_ms": p16["ms_per_step"],
                     "bf16_speedup_cpu": c32 / c16, "bf16_speedup_wall": g32["ms_per_step"] / g16["ms_per_step"],
                     "gt_vs_pt_fp32_cpu": p32["cpu_ms_per_step"] / c32, "gt_vs_pt_bf16_cpu": p16["cpu_ms_per_step"] / c16,
                     "gflops_fp32_cpu": flops / c32 * 1e-6, "gflops_bf16_cpu": flops / c16 * 1e-6,
                     "peak_fp32": g32["peak_gflops_per_rank"], "peak_bf16": g16["peak_gflops_per_rank"],
                     "ledger_act_fp32_mb": g32["analytic_activation_mb"], "ledger_act_bf16_mb": g16["analytic_activation_mb"],
                     "rss_fp32_mb": g32["peak_rss_mb"], "rss_bf16_mb": g16["peak_rss_mb"],
                     "state_fp32_mb": g32["analytic_state_mb"], "state_bf16_mb": g16["analytic_state_mb"],
                     "rss_act_fp32_mb": act(g32), "rss_act_bf16_mb": act(g16), "rss_act_ratio": act(g16) / act(g32),
                     "ledger_act_ratio": g16["analytic_activation_mb"] / g32["analytic_activation_mb"],
                     "pt_rss_fp32_mb": p32["peak_rss_mb"], "pt_rss_bf16_mb": p16["peak_rss_mb"]})
d1, d2 = gt("gt_small_bf16_dp1"), gt("gt_small_bf16_dp2")
t2 = open(f"{out}/gt_small_bf16_dp2.time").read().split()
scaling = {"wall_ms_dp1": d1["ms_per_step"], "wall_ms_dp2": d2["ms_per_step"],
           "wall_efficiency": d1["ms_per_step"] / d2["ms_per_step"],
           "cpu_s_dp1": cpu("gt_small_bf16_dp1"), "cpu_s_dp2_per_rank": (float(t2[0]) + float(t2[1])) / 2}
json.dump({"rows": rows, "dp2_bf16_small": scaling}, open(f"{out}/precision.json", "w"), indent=1)


def table(columns, cells):
    """A Markdown table of rows: the header of the given columns, then one line per row, cells(row) its cells."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for x in rows:
        print("| " + " | ".join(cells(x)) + " |")
    print()


table(["preset", "round", "gt fp32", "gt bf16", "PyTorch fp32", "PyTorch bf16 autocast",
       "gt bf16 speed-up over gt fp32", "gt/PyTorch fp32", "gt/PyTorch bf16", "gt GFLOP/s fp32, bf16 (CPU time)",
       "wall ms gt fp32, bf16"],
      lambda x: [x['preset'], str(x['round']), f"{x['gt_fp32_cpu_ms']:.0f}", f"{x['gt_bf16_cpu_ms']:.0f}",
                 f"{x['pt_fp32_cpu_ms']:.0f}", f"{x['pt_bf16_cpu_ms']:.0f}", f"{x['bf16_speedup_cpu']:.2f}x",
                 f"{x['gt_vs_pt_fp32_cpu']:.2f}x", f"{x['gt_vs_pt_bf16_cpu']:.2f}x",
                 f"{x['gflops_fp32_cpu']:.0f}, {x['gflops_bf16_cpu']:.0f}",
                 f"{x['gt_fp32_wall_ms']:.0f}, {x['gt_bf16_wall_ms']:.0f}"])
table(["preset", "round", "activation ledger fp32 / bf16 MiB (ratio)", "peak RSS fp32 / bf16 MiB",
       "state ledger fp32 / bf16 MiB", "RSS - state - baseline fp32 / bf16 MiB (ratio)",
       "PyTorch peak RSS fp32 / bf16 MiB"],
      lambda x: [x['preset'], str(x['round']),
                 f"{x['ledger_act_fp32_mb']:.0f} / {x['ledger_act_bf16_mb']:.0f} "
                 f"({x['ledger_act_ratio']:.2f})",
                 f"{x['rss_fp32_mb']:.0f} / {x['rss_bf16_mb']:.0f}",
                 f"{x['state_fp32_mb']:.0f} / {x['state_bf16_mb']:.0f}",
                 f"{x['rss_act_fp32_mb']:.0f} / {x['rss_act_bf16_mb']:.0f} ({x['rss_act_ratio']:.2f})",
                 f"{x['pt_rss_fp32_mb']:.0f} / {x['pt_rss_bf16_mb']:.0f}"])
print(f"dp=2 weak scaling, small bf16: wall {scaling['wall_ms_dp1']:.0f} ms (1 rank) vs {scaling['wall_ms_dp2']:.0f} ms "
      f"(2 ranks): {100 * scaling['wall_efficiency']:.0f}%; CPU s per rank (whole run) {scaling['cpu_s_dp1']:.1f} vs "
      f"{scaling['cpu_s_dp2_per_rank']:.1f}")
