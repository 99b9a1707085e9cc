#!/usr/bin/env python3
"""The GPU peer of a gridtrain run: the same GPT-2 model and training step (AdamW, tied head, tanh GELU) in PyTorch
on one CUDA device, timed with CUDA events, for a side-by-side ratio on the machine that runs gridtrain's CUDA build
(scripts/gpu_check.sh calls it in the same device call). Not part of the test suite.

  python3 scripts/bench_torch_gpu.py --preset gpt2-124m --precision bf16 --attention sdpa --batch 4

--attention math: the (B, heads, T, T) probabilities materialised, as gridtrain's device split does today;
            sdpa: torch's scaled_dot_product_attention (a fused flash kernel on Hopper), the fair modern baseline.
--precision fp32: TF32 off (plain fp32 GEMMs, what gridtrain's fp32 runs do); bf16: autocast to bf16 with fp32 weights
            and optimizer, gridtrain's train.precision=bf16 counterpart.
Prints one JSON line per configuration (median ms/step over --steps timed steps after --warmup), tokens/s and MFU
with gridtrain's FLOP formula tokens * (6 (N - T C) + 12 L T C) against the device's dense datasheet peak.
"""
import argparse, json, math, os, statistics, sys, time

from torch_gpt import build_gpt, read_preset

# dense TFLOP/s by device name (kernels/device_peak.cpp holds the same table): fp32, bf16
PEAKS = [("H200 NVL", 60.0, 835.5), ("H200", 66.9, 989.4), ("H100 PCIe", 51.2, 756.0), ("H100 NVL", 60.0, 835.5),
         ("H100", 66.9, 989.4), ("A100", 19.5, 312.0)]


def run(torch, a, preset, precision, attention, B):
    c = read_preset(preset)
    L, C, H, T, V = (int(c["model." + k]) for k in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size"))
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = build_gpt(torch, L, C, H, T, V, attention, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    idx = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)
    n_params = sum(p.numel() for p in model.parameters())
    flops = B * T * (6 * (n_params - T * C) + 12 * L * T * C)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(precision == "bf16")):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        loss = step()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    ms = statistics.median(times)
    name = torch.cuda.get_device_name()
    peak = next((p for p in PEAKS if p[0] in name), None)
    peak_tflops = (peak[2] if precision == "bf16" else peak[1]) if peak else None
    achieved = flops / (ms * 1e-3) * 1e-12
    res = {"peer": "pytorch", "preset": preset, "precision": precision, "attention": attention, "batch": B,
           "ms_per_step": ms, "ms_min": min(times), "ms_max": max(times), "tokens_per_s": B * T / (ms * 1e-3),
           "tflops": achieved, "mfu": achieved / peak_tflops if peak_tflops else None, "peak_tflops": peak_tflops,
           "loss": float(loss), "device": name, "torch": torch.__version__,
           "max_mem_gib": torch.cuda.max_memory_allocated() / 2**30}
    del model, opt
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="gpt2-124m")
    ap.add_argument("--precision", default="bf16", help="comma list of fp32,bf16")
    ap.add_argument("--attention", default="sdpa", help="comma list of math,sdpa")
    ap.add_argument("--batch", default="4", help="comma list of micro-batch sizes")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("bench_torch_gpu: no CUDA device visible to torch", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 (gridtrain's fp32 runs use no TF32)
    torch.backends.cudnn.allow_tf32 = False
    for prec in a.precision.split(","):
        for att in a.attention.split(","):
            for b in a.batch.split(","):
                try:
                    res = run(torch, a, a.preset, prec, att, int(b))
                except Exception as e:  # one configuration failing (memory) must not lose the others
                    res = {"peer": "pytorch", "preset": a.preset, "precision": prec, "attention": att, "batch": b,
                           "error": str(e).splitlines()[0][:200]}
                line = json.dumps(res)
                print(line, flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
