#!/usr/bin/env python3
"""The peer a user would pick for sharded data parallelism on CPU: PyTorch (1.13, gloo) DDP + AdamW,
ZeroRedundancyOptimizer (ZeRO-1) and FullyShardedDataParallel (ZeRO-3). Prints whether each runs and its peak RSS
per rank (MiB) after two steps of a GPT-2-small-sized stack (embedding 50304 x 768 + 12 MLP blocks of
768 x 3072, about 95 M parameters: the shapes that dominate gpt2-124m's state; no attention: memory of the
model states is what is compared), and the seconds of the second step. Each mode is bounded: after TIMEOUT
seconds (environment, default 240) its processes are terminated and the mode reported as timed out.
Usage: python3 scripts/bench_torch_zero.py [world=2]"""
import os
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def model():
    torch.manual_seed(0)
    layers = [nn.Embedding(50304, 768)]
    for _ in range(12):
        layers += [nn.Linear(768, 3072), nn.GELU(), nn.Linear(3072, 768)]
    return nn.Sequential(*layers)


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(rank, world, mode, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        m = model()
        if mode == "ddp":
            net = nn.parallel.DistributedDataParallel(m)
            opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        elif mode == "zero1":
            from torch.distributed.optim import ZeroRedundancyOptimizer
            net = nn.parallel.DistributedDataParallel(m)
            opt = ZeroRedundancyOptimizer(net.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-4)
        else:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            net = FSDP(m)
            opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        x = torch.randint(0, 50304, (1, 64))
        dt = 0.0
        for _ in range(2):
            t0 = time.perf_counter()
            opt.zero_grad()
            net(x).float().pow(2).mean().backward()
            opt.step()
            dt = time.perf_counter() - t0
        q.put((rank, f"ok, step 2 {dt:.2f} s", rss_mib()))
    except Exception as e:  # report, do not hang the others
        q.put((rank, "failed: " + str(e).splitlines()[0][:160], rss_mib()))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(f"torch {torch.__version__}, gloo, world {world}, {sum(p.numel() for p in model().parameters())/1e6:.1f} M parameters")
    for mode in ("ddp", "zero1", "fsdp"):
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        procs = [ctx.Process(target=run, args=(r, world, mode, q)) for r in range(world)]
        for p in procs:
            p.start()
        limit = float(os.environ.get("TIMEOUT", "240"))
        t0 = time.monotonic()
        res = []
        try:
            for _ in procs:
                res.append(q.get(timeout=max(1.0, limit - (time.monotonic() - t0))))
        except Exception:  # queue.Empty: a mode that hangs or crawls under load must not hold the benchmark
            pass
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        if len(res) < world:
            print(mode, f"| timed out after {limit:.0f} s ({len(res)} of {world} ranks finished)", flush=True)
            continue
        print(mode, "|", "; ".join(f"rank {r}: {s}, peak RSS {m:.0f} MiB" for r, s, m in sorted(res)), flush=True)
