#!/usr/bin/python3
"""The peer a user would pick instead: the same GPT-2 or Llama model and training step in PyTorch (Debian's
python3-torch 1.13, CPU), for side-by-side figures with gridtrain (issues #2, #3 and 20).

  python3 scripts/bench_pytorch.py --preset small --threads 1 --steps 5            # single process
  python3 scripts/bench_pytorch.py --preset small --ddp 2 --steps 5                # DDP, gloo, 2 ranks pinned one per core
  python3 scripts/bench_pytorch.py --preset small --autocast bf16 --batch 2         # CPU bf16 autocast, batch override
  python3 scripts/bench_pytorch.py --preset llama-125m --seq-len 1024 --batch 1       # the Llama peer (issue 23)
  python3 scripts/bench_pytorch.py --preset small --tune none                      # PyTorch as installed, the model as first written

The peer runs as fast as PyTorch 1.13 honestly gets on a CPU (issue 20: an independent script of the same model
ran 1.2-1.3x faster than this one did). Each setting below is one a user tuning PyTorch for the CPU would make
(PyTorch's CPU performance tuning guide, OpenBLAS' and glibc's manuals); none changes the model's arithmetic.
--tune picks them. In the 2026-12-04 ablation (docs/benchmarks.md) blas and alloc carried the gain (each 1.6-2.0x
of CPU time per step), mask 1.07-1.25x, threads and isa stayed within the noise but are kept (they are what a
one-thread user of this CPU sets), foreach and denormal did not help and are left out of the default;
`--tune all` adds them, `--tune none` is the script as it was before, for A/B runs.
  threads   OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = --threads: torch.set_num_threads does not reach the
            generic-BLAS build's OpenBLAS, whose pthread pool otherwise takes every core.
  blas      OPENBLAS_CORETYPE for the CPU (SkylakeX with AVX-512, Haswell with AVX2): Debian's OpenBLAS 0.3.21
            does not know newer CPUs and this machine's environment pins Haswell (half the AVX-512 rate).
  alloc     GLIBC_TUNABLES glibc.malloc.mmap_max=0 (+ a high trim threshold): PyTorch 1.13 has no caching
            allocator on the CPU, so every tensor above glibc's 32 MiB mmap limit (the logits of `small`, 32 MiB)
            was mmap'ed and page-faulted afresh each step: the LM head's GEMM ran at 47 GFLOP/s instead of 174.
            (jemalloc or tcmalloc by LD_PRELOAD, the guide's advice, do the same; neither is installed here.)
  isa       ATEN_CPU_CAPABILITY=avx512 where the CPU has it (1.13 dispatches its element-wise kernels to AVX2).
  mask      an additive causal mask, scaled and added in the batched GEMM (torch.baddbmm) instead of
            scale, then masked_fill with a negated bool mask: two passes over B x H x T x T fewer.
  foreach   (not default) AdamW(foreach=True): one multi-tensor kernel per operation instead of a loop.
  denormal  (not default) torch.set_flush_denormal(True).
The environment settings need a fresh process (OpenBLAS and glibc read them at start-up), so the script
re-executes itself once with them; the JSON line records every setting used.

Timing: --warmup steps (default 2) are left out; ms_per_step is the mean wall time of the rest and
cpu_ms_per_step their mean CPU time (robust on a shared machine); the medians are given too.
Prints ms/step, tokens/s and GFLOP/s with gridtrain's FLOP count (src/core/model_flops.hpp: tokens x
(6 N_matmul + 12 L T C), N_matmul = 12 L C^2 + V C), and writes a JSON line to --out. Not part of the test
suite (PyTorch is not a dependency of gridtrain).
"""
import argparse, json, math, os, statistics, sys, time

from torch_gpt import build_gpt, read_preset

TUNES = ("threads", "blas", "alloc", "isa", "mask", "foreach", "denormal")
DEFAULT_TUNES = ("threads", "blas", "alloc", "isa", "mask")  # foreach, denormal: no gain measured


def cpu_flags():
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def tuned_env(tunes, threads):
    """The environment the chosen settings need, as changes to os.environ."""
    env, flags = {}, cpu_flags()
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
    if "threads" in tunes:
        env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    if "blas" in tunes:
        core = "SkylakeX" if avx512 else "Haswell" if {"avx2", "fma"} <= flags else None
        if core:
            env["OPENBLAS_CORETYPE"] = core
    if "alloc" in tunes:
        env["GLIBC_TUNABLES"] = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
    if "isa" in tunes and avx512:
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    return env


def build_llama(torch, L, C, H, KV, F, T, V, theta, eps, fused_mask):
    """Llama blocks as gridtrain's model.arch = llama has them (docs/model.md): RMSNorm, SwiGLU, RoPE on q and k
    (on halves, as gridtrain: pair (i, i + hd/2) of each head rotated by t theta^(-2i/hd)), grouped-query attention (KV heads, each serving
    H/KV query heads), no biases, an untied head. Attention is materialized (PyTorch 1.13 has no fused CPU
    attention): the additive causal mask in the batched GEMM, as the GPT peer's 'mask' setting."""
    nn, hd = torch.nn, C // H
    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))
        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]  # (T, hd/2)
    cos, sin = ang.cos(), ang.sin()
    def rope(x):  # x: (B, heads, T, hd)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.qkv = nn.Linear(C, C + 2 * KV * hd, bias=False)
            self.proj = nn.Linear(C, C, bias=False)
            self.gate_up = nn.Linear(C, 2 * F, bias=False)
            self.down = nn.Linear(F, C, bias=False)
            self.bias = torch.full((T, T), float("-inf")).triu(1)
            self.mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.n1(x)).split([C, KV * hd, KV * hd], dim=2)
            q = rope(q.view(B, T, H, hd).transpose(1, 2))
            k = rope(k.view(B, T, KV, hd).transpose(1, 2)).repeat_interleave(H // KV, dim=1)
            v = v.view(B, T, KV, hd).transpose(1, 2).repeat_interleave(H // KV, dim=1)
            if fused_mask:
                att = torch.baddbmm(self.bias, q.reshape(B * H, T, hd), k.reshape(B * H, T, hd).transpose(1, 2),
                                    alpha=1.0 / math.sqrt(hd)).softmax(dim=-1).view(B, H, T, T)
            else:
                att = ((q @ k.transpose(-2, -1)) / math.sqrt(hd)).masked_fill(~self.mask, float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
            g, u = self.gate_up(self.n2(x)).chunk(2, dim=-1)
            return x + self.down(torch.nn.functional.silu(g) * u)
    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.norm_f, self.head = RMSNorm(), nn.Linear(C, V, bias=False)
        def forward(self, idx, tgt):
            x = self.wte(idx)
            for b in self.blocks:
                x = b(x)
            return torch.nn.functional.cross_entropy(self.head(self.norm_f(x)).view(-1, V), tgt.view(-1))
    return Llama()


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="small")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="steps run first and left out of the figures")
    ap.add_argument("--ddp", type=int, default=0, help="number of DDP ranks (gloo), one thread each")
    ap.add_argument("--rank", type=int, default=-1)
    ap.add_argument("--out", default="runs/bench/pytorch.jsonl")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help="bf16: forward under torch.autocast('cpu', bfloat16) (fp32 weights, bf16 matmuls)")
    ap.add_argument("--batch", type=int, default=0, help="micro-batch size instead of the preset's")
    ap.add_argument("--seq-len", type=int, default=0, help="sequence length instead of the preset's")
    ap.add_argument("--tune", default="default",
                    help="comma-separated settings from " + ",".join(TUNES) + "; 'default' (" +
                         ",".join(DEFAULT_TUNES) + "), 'all' or 'none'")
    a = ap.parse_args()
    a.tunes = (set(DEFAULT_TUNES) if a.tune == "default" else set(TUNES) if a.tune == "all"
               else set() if a.tune == "none" else set(a.tune.split(",")))
    if a.tunes - set(TUNES):
        ap.error("unknown --tune settings: " + ",".join(sorted(a.tunes - set(TUNES))))
    return a


def reexec_tuned(a):
    """Re-executes this script once with the environment its settings need (read at library load)."""
    env = tuned_env(a.tunes, 1 if a.ddp else a.threads)
    if os.environ.get("GT_PEER_ENV_APPLIED") == "1" or not env:
        return
    os.execve(sys.executable, [sys.executable, __file__] + sys.argv[1:],
              dict(os.environ, GT_PEER_ENV_APPLIED="1", **env))


def launch_ddp(a):
    import subprocess
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    procs = [subprocess.Popen(["taskset", "-c", str(r % os.cpu_count()), sys.executable, __file__] + sys.argv[1:]
                              + ["--rank", str(r)], env=env) for r in range(a.ddp)]
    raise SystemExit(max(p.wait() for p in procs))


def main():
    a = parse_args()
    reexec_tuned(a)
    if a.ddp and a.rank < 0:
        launch_ddp(a)
    import torch
    torch.set_num_threads(1 if a.ddp else a.threads)
    if "denormal" in a.tunes:
        torch.set_flush_denormal(True)
    torch.manual_seed(0)
    c = read_preset(a.preset)
    L, C, H, T, V = (int(c["model." + k]) for k in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size"))
    T = a.seq_len or T
    B = a.batch or int(c.get("train.micro_batch_size", 4))
    if c.get("model.arch") == "llama":  # the shapes gridtrain resolves (src/model: n_kv_head 0 = n_head)
        KV = int(c.get("model.n_kv_head", 0)) or H
        F = int(c.get("model.ffn_hidden", 0)) or 256 * math.ceil(8 * C / 3 / 256)
        model = build_llama(torch, L, C, H, KV, F, T, V, float(c.get("model.rope_theta", 10000)),
                            float(c.get("model.norm_eps", 1e-5)), "mask" in a.tunes)
        n_matmul = L * (2 * C * C + 2 * C * KV * (C // H) + 3 * C * F) + V * C
    else:
        model = build_gpt(torch, L, C, H, T, V, "fused_mask" if "mask" in a.tunes else "math")
        n_matmul = 12 * L * C * C + V * C
    if a.ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=a.rank, world_size=a.ddp)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, foreach="foreach" in a.tunes)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))
    n_params = sum(p.numel() for p in model.parameters())
    flops = B * T * (6 * n_matmul + 12 * L * T * C)  # src/core/model_flops.hpp: 6 N_matmul + 12 L T h
    times, cpu = [], []
    for it in range(a.warmup + a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        if a.autocast == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(idx, tgt)
        else:
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        if it >= a.warmup:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # this process's CPU time: robust on a shared machine
    ms = 1e3 * statistics.mean(times)
    world = max(1, a.ddp)
    settings = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                                           "GLIBC_TUNABLES", "ATEN_CPU_CAPABILITY") if k in os.environ}
    res = {"preset": a.preset, "seq_len": T, "mode": f"ddp{a.ddp}" if a.ddp else f"threads{a.threads}", "ms_per_step": ms,
           "tokens_per_s": world * B * T / (ms * 1e-3), "gflops_per_rank": flops / (ms * 1e-3) * 1e-9,
           "params": n_params, "torch": torch.__version__, "load": open("/proc/loadavg").read().strip(),
           "autocast": a.autocast, "batch": B, "cpu_ms_per_step": 1e3 * statistics.mean(cpu),
           "median_ms_per_step": 1e3 * statistics.median(times), "median_cpu_ms_per_step": 1e3 * statistics.median(cpu),
           "steps": a.steps, "warmup": a.warmup, "tune": sorted(a.tunes), "env": settings,
           "peak_rss_mb": __import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss / 1024.0}
    if a.rank <= 0:
        print(json.dumps(res))
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "a") as f:
            f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
