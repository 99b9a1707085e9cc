#!/usr/bin/env python3
"""Validation of `gridtrain plan` against published training runs (docs/planner.md, "Validation against published
runs"). The runs, their sources and which were used to design the model ("design") or kept apart ("heldout") are in
inputs/plan_validation/published_runs.json. Every row is predicted with its cluster description
(inputs/clusters/*.toml, one per machine type, the same for every row on it) and its framework's defaults; nothing is
fitted per row. What a row's source publishes (tp, pp, micro-batch, recompute, ...) is fixed; what it does not is left
to the planner, which takes its best layout (the row says which).

usage: scripts/plan_validate.py [GRIDTRAIN] [--runs FILE] [--set design|heldout|all] [--only ID_SUBSTRING]
                               [--extra "ARGS"] [--framework NAME]
prints markdown tables per source and the mean / max |error| of the design and held-out rows. --extra appends
planner arguments to every row and --framework replaces the rows' own (for taking a mechanism out: e.g.
--extra "--tp-overlap off", --extra "model.attention=materialized", --extra "--virtual-stages 1").
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def model_flops(m, B, formula):
    """FLOPs of one step as the source counted them, to turn its TFLOP/s into seconds."""
    L, h, a, s, V = m["L"], m["h"], m["a"], m["s"], m["V"]
    if formula == "ptdp-recompute":  # PTD-P eq. 3 with full recompute (also DeepSpeed's 2022 blog)
        return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    if formula == "megatron":  # Megatron-Core's num_floating_point_operations (2024), GQA and SwiGLU included
        kv = m.get("kv", a)
        ffn = m.get("ffn", 4 * h)
        gated = 1.5 if m.get("arch") == "llama" else 1.0
        return 12 * B * s * L * h * h * ((1 + kv / a + s / h) + ffn / h * gated + V / (2 * L * h))
    raise ValueError(formula)


def published_step(row, batch):
    p, m = row["published"], row["model"]
    if p["kind"] == "step_s":
        return p["value"]
    if p["kind"] == "tokens_per_s_per_gpu":
        return batch * m["s"] / (p["value"] * row["gpus"])
    tflops = p["value"] if p["kind"] == "tflops_per_gpu" else p["value"] * p["peak_tflops"]
    return model_flops(m, batch, p["flops"]) / (tflops * 1e12 * row["gpus"])


EXTRA = []
FRAMEWORK = None


def plan(binary, row, batch, micro_batch):
    m, f = row["model"], row["fixed"]
    cmd = [binary, "plan", "--config", "tiny", f"model.n_layer={m['L']}", f"model.d_model={m['h']}",
           f"model.n_head={m['a']}", f"model.seq_len={m['s']}", f"model.vocab_size={m['V']}",
           "--cluster", row["cluster"], "--devices", str(row["gpus"]), "--global-batch", str(batch),
           "--framework", FRAMEWORK or row["framework"], "--tp-across-nodes", "--json"]
    if m.get("arch"):
        cmd.append(f"model.arch={m['arch']}")
    for key, opt in (("kv", "model.n_kv_head"), ("ffn", "model.ffn_hidden")):
        if key in m:
            cmd.append(f"{opt}={m[key]}")
    if "tied" in m:
        cmd.append(f"model.tie_embeddings={'true' if m['tied'] else 'false'}")
    for key, opt in (("tp", "--tp"), ("pp", "--pp"), ("cp", "--cp"), ("precision", "--precision"),
                     ("recompute", "--recompute"), ("zero", "--zero"), ("virtual_stages", "--virtual-stages")):
        if key in f:
            cmd += [opt, str(f[key])]
    if micro_batch:
        cmd += ["--micro-batch", str(micro_batch)]
    for x in EXTRA:  # later options win: an --extra option replaces the row's own
        cmd.append(x)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "exit %d" % out.returncode
    return json.loads(out.stdout)["fits"][0], ""


def predict(binary, row):
    """(best candidate, batch, published seconds) or (None, why)."""
    f = row["fixed"]
    choices = f.get("micro_batch_choices")
    if choices:  # a published peak over micro-batch sizes: the planner's best throughput among them
        best = None
        for b in choices:
            batch = b * row["gpus"]
            cand, why = plan(binary, row, batch, b)
            if cand and (best is None or cand["tokens_per_s"] > best[0]["tokens_per_s"]):
                best = (cand, batch)
        if best is None:
            return None, why
        return (best[0], best[1], published_step(row, best[1])), ""
    cand, why = plan(binary, row, row["batch"], f.get("micro_batch"))
    if not cand:
        return None, why
    return (cand, row["batch"], published_step(row, row["batch"])), ""


def layout_str(l):
    s = f"tp{l['tp']} pp{l['pp']} dp{l['dp']}"
    if l.get("cp", 1) > 1:
        s += f" cp{l['cp']}"
    if l.get("virtual_stages", 1) > 1:
        s += f" v{l['virtual_stages']}"
    return s + f" b{l['micro_batch']} m{l['micro_batches']} z{l['zero']} {l['recompute']}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default="build/src/cli/gridtrain")
    ap.add_argument("--runs", default=os.path.join(HERE, "..", "inputs", "plan_validation", "published_runs.json"))
    ap.add_argument("--set", default="all", choices=["design", "heldout", "all"])
    ap.add_argument("--only", default="")
    ap.add_argument("--extra", default="")
    ap.add_argument("--framework", default=None)
    args = ap.parse_args()
    global FRAMEWORK
    EXTRA.extend(args.extra.split())
    FRAMEWORK = args.framework
    rows = [r for r in json.load(open(args.runs))["rows"]
            if (args.set == "all" or r["set"] == args.set) and args.only in r["id"]]
    errs = {"design": [], "heldout": []}
    groups = []
    for r in rows:
        if r["group"] not in groups:
            groups.append(r["group"])
    for g in groups:
        print(f"\n{g}\n")
        print("| run | set | GPUs | batch | published s/step | predicted s | error | planner's layout | "
              "compute / tp+cp / pp / dp / bubble % | memory GB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        ge = []
        for r in (r for r in rows if r["group"] == g):
            res, why = predict(args.binary, r)
            if not res:
                print(f"| {r['id']} | {r['set']} | {r['gpus']} | {r['batch']} | | no fit: {why} | | | | |")
                errs[r["set"]].append(float("inf"))
                continue
            cand, batch, pub = res
            t = cand["time_ms"]
            pred = t["step"] / 1e3
            e = (pred - pub) / pub
            errs[r["set"]].append(abs(e))
            ge.append(abs(e))
            sh = lambda *k: 100 * sum(t[x] for x in k) / t["step"]
            print(f"| {r['id']} | {r['set']} | {r['gpus']} | {batch} | {pub:.3f} | {pred:.3f} | {100 * e:+.1f}% | "
                  f"{layout_str(cand['layout'])} | {sh('compute'):.0f} / {sh('tp', 'cp'):.0f} / {sh('pp'):.0f} / "
                  f"{sh('dp'):.0f} / {sh('bubble'):.0f} | {cand['memory_gb']['total']:.1f} |")
        if ge:
            print(f"\n{g}: mean |error| {100 * sum(ge) / len(ge):.1f}%, max {100 * max(ge):.1f}% over {len(ge)} rows")
    print()
    for s in ("design", "heldout"):
        e = errs[s]
        if e:
            fin = [x for x in e if x != float("inf")]
            print(f"{s} rows: {len(e)}, mean |error| {100 * sum(fin) / max(1, len(fin)):.1f}%, max "
                  f"{100 * max(e):.1f}%{'' if len(fin) == len(e) else ', %d without a fit' % (len(e) - len(fin))}, "
                  f"within 30%: {sum(1 for x in e if x <= 0.3)}")


if __name__ == "__main__":
    main()
