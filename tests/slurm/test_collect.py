#!/usr/bin/env python3
"""scripts/collect.py on hand-made summaries with random numbers: the table must carry each run's numbers,
order the points by ranks, compute efficiency against the smallest point, skip unfinished runs, and fail
when there is nothing to collect."""
import csv, json, os, random, subprocess, sys, tempfile

collect = sys.argv[1]
rng = random.Random()
seed = rng.randrange(1 << 30)
rng.seed(seed)
tmp = tempfile.mkdtemp(prefix="collect-test-")
runs = {}
for ranks, tp in ((4, 2), (1, 1), (8, 1), (2, 1)):
    ms = rng.uniform(5, 50)
    parts = [rng.uniform(0, ms / 5) for _ in range(4)]
    tps = rng.uniform(1e3, 1e5)
    s = {"status": "finished", "world_size": ranks, "tp": tp, "pp": 1, "dp": ranks // tp, "steps": 5, "step": 5,
         "final_loss": rng.uniform(1, 5), "tokens_per_s": tps, "tokens_per_s_per_rank": tps / ranks,
         "ms_per_step": ms, "mfu": rng.uniform(0, 0.5), "exposed_comm_share": rng.uniform(0, 0.3),
         "forward_ms": parts[0], "backward_ms": parts[1], "optimizer_ms": parts[2], "comm_exposed_ms": parts[3],
         "micro_batch_size": 2, "micro_batches": 1, "global_batch_tokens": 64 * ranks, "seq_len": 32,
         "resumed_from": ""}
    d = os.path.join(tmp, "sweep", f"group{ranks % 3}", f"r{ranks}")
    os.makedirs(d)
    json.dump(s, open(os.path.join(d, "summary.json"), "w"))
    runs[ranks] = s
d = os.path.join(tmp, "sweep", "r16-preempted")
os.makedirs(d)
json.dump(dict(runs[8], status="preempted", world_size=16), open(os.path.join(d, "summary.json"), "w"))

out = os.path.join(tmp, "out", "table")
res = subprocess.run([sys.executable, collect, os.path.join(tmp, "sweep"), "--out", out, "--title", "test"],
                     capture_output=True, text=True)
assert res.returncode == 0, (seed, res.stdout, res.stderr)
assert "r16-preempted" in res.stderr and "preempted" in res.stderr, res.stderr
rows = list(csv.DictReader(open(out + ".csv")))
assert [int(r["ranks"]) for r in rows] == [1, 2, 4, 8], (seed, rows)
base = runs[1]["tokens_per_s_per_rank"]
for r in rows:
    s = runs[int(r["ranks"])]
    for k in ("tokens_per_s", "tokens_per_s_per_rank", "ms_per_step", "mfu", "exposed_comm_share"):
        assert abs(float(r[k]) - s[k]) <= 1e-9 * abs(s[k]), (seed, k, r[k], s[k])
    assert abs(float(r["efficiency"]) - s["tokens_per_s_per_rank"] / base) < 1e-9, (seed, r)
    other = s["ms_per_step"] - sum(s[k] for k in ("forward_ms", "backward_ms", "optimizer_ms", "comm_exposed_ms"))
    assert abs(float(r["other_ms"]) - max(0.0, other)) < 1e-9, (seed, r)
    assert r["layout"] == f"tp{s['tp']}xpp1", r
md = open(out + ".md").read().splitlines()
assert sum(1 for l in md if l.startswith("| ") and l[2].isdigit()) == 4, md
for suffix in ("_throughput.png", "_breakdown.png"):
    with open(out + suffix, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", suffix

empty = os.path.join(tmp, "empty")
os.makedirs(empty)
res = subprocess.run([sys.executable, collect, empty], capture_output=True, text=True)
assert res.returncode == 1 and "no finished run summary" in res.stderr, (res.returncode, res.stderr)
print(f"collect ok (seed {seed}) in {tmp}")
