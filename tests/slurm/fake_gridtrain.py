#!/usr/bin/env python3
"""Stand-in for `gridtrain train` while the real trainer is being written: same command line, files, exit codes.
Only used when the build has no gridtrain target. World size comes from the PMI environment (srun --mpi=pmi2 or
mpiexec), so a launch that does not wire up MPI shows up as world_size 1, as it would with the real binary."""
import json, math, os, signal, sys, time

def die(msg):
    print(f"gridtrain: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)

args = sys.argv[1:]
if len(args) < 3 or args[0] != "train" or args[1] != "--config":
    print("usage: gridtrain train --config PRESET_OR_DECK [section.key=value ...]", file=sys.stderr)
    sys.exit(2)
deck = args[2]
inputs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs")
path = deck if ("/" in deck or deck.endswith(".toml")) else os.path.join(inputs, deck + ".toml")
if not os.path.exists(path) and deck not in ("tiny", "small", "gpt2-124m"):
    die(f"input deck '{deck}' not found")
kv = {"output.dir": "runs/default", "train.steps": "20", "train.micro_batch_size": "4", "train.micro_batches": "1",
      "parallel.tp": "1", "parallel.pp": "1", "parallel.dp": "0", "checkpoint.every": "0", "checkpoint.dir": "",
      "checkpoint.resume": "none", "train.seed": "1234", "model.seq_len": "32"}
for a in args[3:]:
    k, _, v = a.partition("=")
    kv[k] = v
rank = int(os.environ.get("PMI_RANK", os.environ.get("SLURM_PROCID", "0")))
world = int(os.environ.get("PMI_SIZE", "1"))
tp, pp, dp = int(kv["parallel.tp"]), int(kv["parallel.pp"]), int(kv["parallel.dp"])
if dp == 0:
    dp = world // (tp * pp) if world % (tp * pp) == 0 else 0
if tp * pp * dp != world or dp == 0:
    die(f"grid tp={tp} pp={pp} dp={kv['parallel.dp']} needs {tp * pp * max(dp, 1)} ranks but the world has {world}")
if 4 % tp:
    die(f"model.n_head=4 is not divisible by parallel.tp={tp}")
out = kv["output.dir"]
ckdir = kv["checkpoint.dir"] or os.path.join(out, "checkpoints")
steps, every = int(kv["train.steps"]), int(kv["checkpoint.every"])
B, M, T = int(kv["train.micro_batch_size"]), int(kv["train.micro_batches"]), int(kv["model.seq_len"])
stop = []
signal.signal(signal.SIGUSR1, lambda s, f: stop.append(s))
signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))

step, loss, resumed = 0, 5.0 + int(kv["train.seed"]) % 7 * 0.01, ""
latest = os.path.join(ckdir, "latest.json")
if kv["checkpoint.resume"] == "auto" and os.path.exists(latest):
    resumed = latest
elif kv["checkpoint.resume"] not in ("auto", "none"):
    resumed = kv["checkpoint.resume"]
if resumed:
    st = json.load(open(resumed))
    step, loss = st["step"], st["loss"]
os.makedirs(ckdir, exist_ok=True)

def save():
    if rank == 0:
        tmp = latest + ".tmp"
        json.dump({"step": step, "loss": loss}, open(tmp, "w"))
        os.replace(tmp, latest)

def summary(status, ms):
    if rank != 0:
        return
    tokens = B * M * T * dp
    tps = tokens / (ms / 1000.0)
    s = {"status": status, "world_size": world, "tp": tp, "pp": pp, "dp": dp, "steps": steps, "step": step,
         "final_loss": loss, "tokens_per_s": tps, "tokens_per_s_per_rank": tps / world, "ms_per_step": ms,
         "mfu": 0.01, "exposed_comm_share": 0.05 * (world > 1), "forward_ms": ms * 0.3, "backward_ms": ms * 0.55,
         "optimizer_ms": ms * 0.05, "comm_exposed_ms": ms * 0.05 * (world > 1), "micro_batch_size": B,
         "micro_batches": M, "global_batch_tokens": tokens, "seq_len": T, "resumed_from": resumed}
    json.dump(s, open(os.path.join(out, "summary.json"), "w"), indent=1)

os.makedirs(out, exist_ok=True)
ms = 20.0 * (1 + 0.1 * (world - 1))
with open(os.path.join(out, "metrics.jsonl"), "a") if rank == 0 else open(os.devnull, "w") as metrics:
    while step < steps:
        if stop:
            save(); summary("preempted", ms)
            if rank == 0:
                print(f"gridtrain: signal {stop[0]} at step {step}: checkpoint written, exiting 75", flush=True)
            sys.exit(75)
        time.sleep(ms / 1000.0)
        loss = loss * 0.97 + 0.1 * math.sin(step)
        step += 1
        if rank == 0:
            print(f"step {step:5d}/{steps} loss {loss:.6f}", flush=True)
            metrics.write(json.dumps({"step": step, "loss": loss}) + "\n"); metrics.flush()
        if every and step % every == 0:
            save()
save(); summary("finished", ms)
