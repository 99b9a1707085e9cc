#!/usr/bin/env python3
"""Scaling sweeps: one gridtrain run per (rank count, layout), each writing its summary.json.

  weak scaling  : the work per rank is fixed; the global batch grows with the ranks
                  (each DP rank gets micro_batch_size * tp * pp sequences per micro-batch)
  strong scaling: the global batch is fixed (--global-batch sequences per step) and split over the DP ranks

  scripts/sweep.py --kind weak --ranks 1,2,4 --layouts 1x1,2x1 --deck tiny --steps 10 --out runs/sweeps/weak
  scripts/sweep.py ... --local          the same points, one after the other, with mpiexec instead of Slurm
  scripts/sweep.py ... --wait --collect wait for the Slurm jobs, then write the table and plots (collect.py)

A layout TPxPP uses dp = ranks / (tp * pp); layouts that do not divide a rank count are skipped for it. A layout
may name the ZeRO stage too, TPxPPzN (1x1z3: pure data parallel at ZeRO-3); the point's name then ends in -zN.
  scripts/sweep.py --kind weak --ranks 1,2,4 --layouts 1x1,1x1z1,1x1z2,1x1z3 --deck small --steps 8 ...
Every point is launched through slurm/train.sbatch (sbatch on a cluster, run directly with --local), so the
checks and the output layout are the same in both cases. The points and job ids go to <out>/sweep.json.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["weak", "strong"], default="weak")
    p.add_argument("--ranks", default="1,2,4", help="comma-separated rank counts")
    p.add_argument("--layouts", default="1x1",
                   help="comma-separated TPxPP[zN] layouts, N the ZeRO stage (default pure data parallel, the deck's stage)")
    p.add_argument("--deck", default="tiny", help="preset or input deck")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--micro-batch-size", type=int, default=4, help="weak: sequences per micro-batch per rank")
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--global-batch", type=int, default=0,
                   help="strong: sequences per step (default micro_batch_size * micro_batches * largest rank count)")
    p.add_argument("--out", default="", help="sweep directory (default runs/sweeps/<kind>-<time>)")
    p.add_argument("--local", action="store_true", help="run with mpiexec here instead of submitting to Slurm")
    p.add_argument("--wait", action="store_true", help="wait until all Slurm jobs have ended")
    p.add_argument("--collect", action="store_true", help="then run scripts/collect.py on the sweep")
    p.add_argument("--bin", default=os.environ.get("GT_BIN", ""), help="trainer (default build/src/cli/gridtrain)")
    p.add_argument("--mpi", default="", help="srun --mpi plugin (default pmi2)")
    p.add_argument("--tasks-per-node", type=int, default=0, help="Slurm: ranks per node (default: GPUs per node or 2)")
    p.add_argument("--gpus-per-node", type=int, default=0)
    p.add_argument("--partition", default="")
    p.add_argument("--account", default="")
    p.add_argument("--time", default="00:20:00", help="Slurm time limit per point")
    p.add_argument("--shared", action="store_true",
                   help="Slurm: let points share nodes with other jobs (default: --exclusive, so that concurrent "
                        "points do not disturb each other's timings)")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between queue polls with --wait")
    p.add_argument("--dry-run", action="store_true", help="print the points and commands, run nothing")
    p.add_argument("overrides", nargs="*", help="extra section.key=value overrides for every point")
    return p.parse_args(argv)


def layouts_of(text):
    """'2x1,1x1z3' -> [(2, 1, None), (1, 1, 3)]: (tp, pp, ZeRO stage or None for the deck's)."""
    out = []
    for item in text.split(","):
        spec, _, zero = item.strip().lower().partition("z")
        tp, _, pp = spec.partition("x")
        try:
            out.append((int(tp), int(pp or 1), int(zero) if zero else None))
        except ValueError:
            sys.exit(f"sweep: error: bad layout {item.strip()!r} (expected TPxPP or TPxPPzN, e.g. 2x1 or 1x1z3)")
    return out


def points_of(a):
    ranks = [int(r) for r in a.ranks.split(",")]
    global_batch = a.global_batch or a.micro_batch_size * a.micro_batches * max(ranks)
    points = []
    for r in ranks:
        for tp, pp, zero in layouts_of(a.layouts):
            if r % (tp * pp):
                print(f"sweep: skipping tp={tp} pp={pp} at {r} ranks (does not divide)", file=sys.stderr)
                continue
            dp = r // (tp * pp)
            if a.kind == "weak":
                mbs, mb = a.micro_batch_size * tp * pp, a.micro_batches
            else:
                per_dp = global_batch // dp
                if global_batch % dp or per_dp % a.micro_batches:
                    print(f"sweep: skipping {r} ranks tp={tp} pp={pp}: global batch {global_batch} does not split "
                          f"over dp={dp} x {a.micro_batches} micro-batches", file=sys.stderr)
                    continue
                mbs, mb = per_dp // a.micro_batches, a.micro_batches
            name = f"r{r}-tp{tp}-pp{pp}-dp{dp}" + (f"-z{zero}" if zero is not None else "")
            points.append({"name": name, "ranks": r, "tp": tp, "pp": pp, "dp": dp, "zero": zero,
                           "micro_batch_size": mbs, "micro_batches": mb})
    return points


def overrides_of(a, pt):
    zero = [f"parallel.zero={pt['zero']}"] if pt.get("zero") is not None else []
    return [f"train.micro_batch_size={pt['micro_batch_size']}", f"train.micro_batches={pt['micro_batches']}",
            "data.source=synthetic", "checkpoint.save_final=false"] + zero + list(a.overrides)


def env_of(a, pt, run_dir):
    env = dict(os.environ, GT_ROOT=ROOT, GT_DECK=a.deck, GT_TP=str(pt["tp"]), GT_PP=str(pt["pp"]),
               GT_DP=str(pt["dp"]), GT_STEPS=str(a.steps), GT_RUN_DIR=run_dir, GT_RESUME="none",
               GT_ARGS=" ".join(overrides_of(a, pt)))
    env.pop("GT_CHAIN_FILE", None)
    if a.bin:
        env["GT_BIN"] = os.path.abspath(a.bin)
    if a.mpi:
        env["GT_MPI"] = a.mpi
    return env


def submit(a, pt, run_dir, name):
    cmd = [os.path.join(ROOT, "slurm", "submit.sh"), "--ntasks", str(pt["ranks"]),
           "--time", a.time, "--job-name", f"sweep-{name}-{pt['name']}"]
    if not a.shared:
        cmd += ["--sbatch", "--exclusive"]
    tpn = a.tasks_per_node or a.gpus_per_node
    if tpn:  # whole nodes of tpn ranks each; otherwise Slurm places the ranks
        cmd += ["--nodes", str(max(1, -(-pt["ranks"] // tpn))), "--tasks-per-node", str(tpn)]
    if a.gpus_per_node:
        cmd += ["--gpus-per-node", str(a.gpus_per_node)]
    if a.partition:
        cmd += ["--partition", a.partition]
    if a.account:
        cmd += ["--account", a.account]
    return cmd


def wait_for(job_ids, poll):
    pending = set(job_ids)
    while pending:
        out = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(sorted(pending))],
                             capture_output=True, text=True)
        listed = set(out.stdout.split()) if out.returncode == 0 else set()
        pending &= listed
        if pending:
            time.sleep(poll)


def job_state(job_id):
    out = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout
    fields = dict(w.split("=", 1) for w in out.split() if "=" in w)
    return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "?")


def main(argv):
    a = parse_args(argv)
    name = time.strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(a.out or os.path.join(ROOT, "runs", "sweeps", f"{a.kind}-{name}"))
    name = os.path.basename(out)
    points = points_of(a)
    if not points:
        sys.exit("sweep: error: no point fits the rank counts and layouts")
    os.makedirs(out, exist_ok=True)
    manifest = {"kind": a.kind, "deck": a.deck, "steps": a.steps, "mode": "local" if a.local else "slurm",
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "command": " ".join(shlex.quote(x) for x in ["scripts/sweep.py"] + list(argv)), "points": points,
                "host": os.uname().nodename, "cpus": os.cpu_count(),
                "load_average_start": os.getloadavg()}  # shared machines: how busy it was, next to the numbers
    failed = 0
    for pt in points:
        run_dir = os.path.join(out, pt["name"])
        pt["run_dir"] = run_dir
        env = env_of(a, pt, run_dir)
        if a.local:
            cmd = [os.path.join(ROOT, "slurm", "train.sbatch")]
            env["GT_RANKS"] = str(pt["ranks"])
        else:
            cmd = submit(a, pt, run_dir, name)
        if a.dry_run:
            print(" ".join(f"{k}={shlex.quote(env[k])}" for k in sorted(env) if k.startswith("GT_")),
                  " ".join(shlex.quote(c) for c in cmd))
            continue
        os.makedirs(run_dir, exist_ok=True)
        if a.local:
            print(f"sweep: {pt['name']} ({a.kind}) ...", flush=True)
            with open(os.path.join(run_dir, "launch.log"), "w") as logf:
                rc = subprocess.run(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT).returncode
            pt["exit_code"] = rc
            if rc != 0:
                failed += 1
                print(f"sweep: {pt['name']} failed with exit code {rc}; see {run_dir}/launch.log", file=sys.stderr)
        else:
            res = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"sweep: error: submitting {pt['name']} failed: {res.stderr.strip()}")
            pt["job_id"] = res.stdout.strip()
            print(f"sweep: {pt['name']} submitted as job {pt['job_id']}", flush=True)
    if a.dry_run:
        return 0
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    if not a.local and a.wait:
        wait_for([pt["job_id"] for pt in points], a.poll)
        for pt in points:
            pt["job_state"], pt["exit_code"] = job_state(pt["job_id"])
            if pt["job_state"] != "COMPLETED":
                failed += 1
                print(f"sweep: job {pt['job_id']} ({pt['name']}) ended {pt['job_state']} exit {pt['exit_code']}",
                      file=sys.stderr)
        with open(os.path.join(out, "sweep.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    manifest["load_average_end"] = os.getloadavg()
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"sweep: {len(points)} points in {out}")
    if a.collect and (a.local or a.wait):
        rc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "collect.py"), out]).returncode
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
