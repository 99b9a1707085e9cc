#!/usr/bin/env python3
"""Validation of `gridtrain plan` against published Megatron-LM runs (docs/planner.md): every row predicted with
one cluster description (inputs/clusters/a100-sxm.toml, datasheet figures), nothing fitted per row.
usage: scripts/plan_validate.py [GRIDTRAIN]   prints markdown tables and the mean / max step-time error."""
import json
import subprocess
import sys

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/src/cli/gridtrain"
S, V = 2048, 51200


def plan(L, h, a, tp, pp, gpus, batch, b, recompute, precision="fp16"):
    cmd = [BIN, "plan", "--config", "tiny", f"model.n_layer={L}", f"model.d_model={h}", f"model.n_head={a}",
           f"model.seq_len={S}", f"model.vocab_size={V}", "--cluster", "a100-sxm", "--devices", str(gpus),
           "--global-batch", str(batch), "--framework", "megatron", "--tp", str(tp), "--pp", str(pp),
           "--micro-batch", str(b), "--zero", "0", "--precision", precision, "--recompute", recompute,
           "--tp-across-nodes", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    j = json.loads(out.stdout)
    fits = [f for f in j["fits"] if f["layout"]["micro_batch"] == b]
    return (fits[0] if fits else None), ""


def flops_recompute(L, h, B):  # PTD-P eq. 3: model FLOPs with full recompute, what Table 1's TFLOP/s count
    return 96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h))


def main():
    # Narayanan et al. 2021, Table 1: params (B), heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU.
    table1 = [(1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
              (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
              (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
              (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
              (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163), (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163)]
    errs = []
    print("| model | TP x PP x DP | GPUs | batch | b | published s/step (from TFLOP/s) | predicted s | error | "
          "predicted bubble / TP / PP / DP share | predicted memory GB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p, a, h, L, tp, pp, n, B, tf in table1:
        dp = n // (tp * pp)
        b = 1 if pp > 1 else min(8, B // dp)
        pub = flops_recompute(L, h, B) / (tf * 1e12 * n)
        best, err = plan(L, h, a, tp, pp, n, B, b, "full")
        if not best:
            print(f"| {p}B | {tp}x{pp}x{dp} | {n} | {B} | {b} | {pub:.2f} | no fit: {err} | | | |")
            continue
        t = best["time_ms"]
        pred = t["step"] / 1e3
        e = (pred - pub) / pub
        errs.append(abs(e))
        sh = lambda k: 100 * t[k] / t["step"]
        print(f"| {p}B | {tp}x{pp}x{dp} | {n} | {B} | {b} | {pub:.2f} | {pred:.2f} | {100*e:+.1f}% | "
              f"{sh('bubble'):.0f} / {sh('tp'):.0f} / {sh('pp'):.0f} / {sh('dp'):.0f} % | "
              f"{best['memory_gb']['total']:.1f} |")
    print(f"\nPTD-P Table 1: mean |error| {100*sum(errs)/len(errs):.1f}%, max {100*max(errs):.1f}% over {len(errs)} rows\n")

    # Korthikanti et al. 2022, Tables 3 and 5: full recompute vs sequence parallel + selective recompute.
    table5 = [("22B", 64, 6144, 48, 8, 1, 8, 4, 4, 1.42, 1.10), ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 18.13, 13.75),
              ("530B", 128, 20480, 105, 8, 35, 280, 280, 1, 49.05, 37.83),
              ("1T", 160, 25600, 128, 8, 64, 512, 512, 1, 94.42, 71.49)]
    errs2 = []
    print("| model | TP x PP | GPUs | batch | b | recompute | published s | predicted s | error | predicted MFU | "
          "predicted memory GB (stage 0: states + activations) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, a, h, L, tp, pp, n, B, b, full_s, sel_s in table5:
        for rc, pub in (("full", full_s), ("selective", sel_s)):
            best, err = plan(L, h, a, tp, pp, n, B, b, rc, "bf16")
            if not best:
                print(f"| {name} | {tp}x{pp} | {n} | {B} | {b} | {rc} | {pub} | no fit: {err} | | | |")
                continue
            pred = best["time_ms"]["step"] / 1e3
            e = (pred - pub) / pub
            errs2.append(abs(e))
            m = best["memory_gb"]
            states = m["params"] + m["grads"] + m["optimizer"]
            print(f"| {name} | {tp}x{pp} | {n} | {B} | {b} | {rc}{' + SP' if rc == 'selective' else ''} | {pub} | "
                  f"{pred:.2f} | {100*e:+.1f}% | {100*best['mfu']:.1f}% | {m['total']:.1f} ({states:.1f} + "
                  f"{m['activations']:.1f}) |")
    print(f"\nKorthikanti Table 5: mean |error| {100*sum(errs2)/len(errs2):.1f}%, max {100*max(errs2):.1f}% "
          f"over {len(errs2)} rows")
    allerr = errs + errs2
    print(f"all rows: mean |error| {100*sum(allerr)/len(allerr):.1f}%, max {100*max(allerr):.1f}%")


if __name__ == "__main__":
    main()
