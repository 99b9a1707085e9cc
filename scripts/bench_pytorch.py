#!/usr/bin/python3
"""The peer a user would pick instead: the same GPT-2 model and training step in PyTorch (Debian's
python3-torch 1.13, CPU), for side-by-side figures with gridtrain (issues #2 and #3).

  python3 scripts/bench_pytorch.py --preset small --threads 1 --steps 5            # single process
  python3 scripts/bench_pytorch.py --preset small --ddp 2 --steps 5                # DDP, gloo, 2 ranks pinned one per core
  python3 scripts/bench_pytorch.py --preset small --autocast bf16 --batch 2         # CPU bf16 autocast, batch override

Prints ms/step, tokens/s and GFLOP/s with gridtrain's FLOP formula (tokens * (6 N + 12 L T C)), and writes a
JSON line to --out. Not part of the test suite (PyTorch is not a dependency of gridtrain).
"""
import argparse, json, math, os, time

def read_preset(name):
    path = os.path.join(os.path.dirname(__file__), "..", "inputs", name + ".toml")
    cfg, sec = {}, ""
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.startswith("["):
            sec = line.strip("[]")
            continue
        k, v = [x.strip() for x in line.split("=", 1)]
        cfg[sec + "." + k] = v.strip('"')
    return cfg

def build(torch, L, C, H, T, V):
    nn = torch.nn
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            # a plain attribute, not a buffer: DDP broadcasts buffers and gloo cannot send bool tensors
            self.mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            att = att.masked_fill(~self.mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            return x + self.fcproj(torch.nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))
    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
        def forward(self, idx, tgt):
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return torch.nn.functional.cross_entropy(logits.view(-1, V), tgt.view(-1))
    return GPT()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="small")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--ddp", type=int, default=0, help="number of DDP ranks (gloo), one thread each")
    ap.add_argument("--rank", type=int, default=-1)
    ap.add_argument("--out", default="runs/bench/pytorch.jsonl")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help="bf16: forward under torch.autocast('cpu', bfloat16) (fp32 weights, bf16 matmuls)")
    ap.add_argument("--batch", type=int, default=0, help="micro-batch size instead of the preset's")
    a = ap.parse_args()
    if a.ddp and a.rank < 0:
        import subprocess, sys
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
        procs = [subprocess.Popen(["taskset", "-c", str(r % os.cpu_count()), sys.executable, __file__,
                                   "--preset", a.preset, "--steps", str(a.steps), "--ddp", str(a.ddp),
                                   "--rank", str(r), "--out", a.out], env=env) for r in range(a.ddp)]
        raise SystemExit(max(p.wait() for p in procs))
    import torch
    torch.set_num_threads(1 if a.ddp else a.threads)
    torch.manual_seed(0)
    c = read_preset(a.preset)
    L, C, H, T, V = (int(c["model." + k]) for k in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size"))
    B = a.batch or int(c.get("train.micro_batch_size", 4))
    model = build(torch, L, C, H, T, V)
    if a.ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=a.rank, world_size=a.ddp)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))
    n_params = sum(p.numel() for p in model.parameters())
    flops = B * T * (6 * (n_params - T * C) + 12 * L * T * C)
    times, cpu = [], []
    for it in range(a.steps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        if a.autocast == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(idx, tgt)
        else:
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        if it:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # this process's CPU time: robust on a shared machine
    ms = 1e3 * sum(times) / len(times)
    world = max(1, a.ddp)
    res = {"preset": a.preset, "mode": f"ddp{a.ddp}" if a.ddp else f"threads{a.threads}", "ms_per_step": ms,
           "tokens_per_s": world * B * T / (ms * 1e-3), "gflops_per_rank": flops / (ms * 1e-3) * 1e-9,
           "params": n_params, "torch": torch.__version__, "load": open("/proc/loadavg").read().strip(),
           "autocast": a.autocast, "batch": B, "cpu_ms_per_step": 1e3 * sum(cpu) / len(cpu),
           "peak_rss_mb": __import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss / 1024.0}
    if a.rank <= 0:
        print(json.dumps(res))
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "a") as f:
            f.write(json.dumps(res) + "\n")

if __name__ == "__main__":
    main()
