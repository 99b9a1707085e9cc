#!/usr/bin/env bash
# A training run longer than one allocation: a chain of jobs on one run directory, each resuming from the newest
# checkpoint (checkpoint.resume=auto). Job k+1 depends on job k with afterok:
#   - job k stopped by the time-limit signal writes a checkpoint and exits 0, so job k+1 starts and continues;
#   - job k that finishes the run cancels the rest of the chain (they would have nothing to do);
#   - job k that fails (bad deck, bad grid, crash) exits 1, and Slurm cancels the rest (kill_invalid_depend,
#     or they stay pending with reason DependencyNeverSatisfied where that is not configured).
# With --elastic (issue 25, continue after a loss) the jobs depend on each other with afterany instead, so a job that
# lost a node does not end the chain: the next job re-plans the grid for the ranks it gets (GT_REPLAN=1, the global
# batch kept by gradient accumulation) and resumes from the newest valid checkpoint. Give the allocation as a node
# range (--sbatch "--nodes=MIN-MAX" with --tasks-per-node) so Slurm can start the next job on the nodes that remain.
# A failure that is not a loss still ends the chain (slurm/train.sbatch): an error before the launch (deck, grid)
# at once, and two failed jobs in a row that wrote no new checkpoint.
#   slurm/chain.sh [--jobs N] [--after JOBID] [--elastic] [slurm/submit.sh options] [-- section.key=value ...]
#     --jobs N      length of the chain (default CHAIN_JOBS=4)
#     --after ID    make the first job wait for an existing job (afterany), e.g. to extend a chain
#     --elastic     go on after a failed job (afterany), re-planning for the ranks the next job has
#   Re-running with the same --run-dir extends a chain that ran out of jobs.
# Prints the job ids, one a line; they are also appended to <run dir>/chain.jobs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${CHAIN_JOBS:-4}; after=""; elastic=0; pass=()
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --elastic) elastic=1; shift ;;
    --run-dir) export GT_RUN_DIR=$2; shift 2 ;;
    --dependency) echo "chain.sh: error: the chain sets the dependencies itself (use --after)" >&2; exit 2 ;;
    --) pass+=("$@"); break ;;
    *) pass+=("$1"); shift ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "chain.sh: error: --jobs must be a positive integer" >&2; exit 2; }
export GT_RUN_DIR=${GT_RUN_DIR:-${GT_RUNS:-$here/runs/slurm}/chain-$(date +%Y%m%d-%H%M%S)-$$}
[[ $GT_RUN_DIR == /* ]] || GT_RUN_DIR=$PWD/$GT_RUN_DIR
mkdir -p "$GT_RUN_DIR"
export GT_CHAIN_FILE=$GT_RUN_DIR/chain.jobs GT_RESUME=auto
[ $elastic = 1 ] && export GT_CHAIN_ELASTIC=1 GT_REPLAN=1

prev=$after; dep_kind=afterany
for _ in $(seq "$jobs"); do
  dep=()
  [ -n "$prev" ] && dep=(--dependency "$dep_kind:$prev")
  id=$("$here/slurm/submit.sh" "${dep[@]}" "${pass[@]}")
  echo "$id" >>"$GT_CHAIN_FILE"
  echo "$id"
  prev=$id; [ $elastic = 1 ] || dep_kind=afterok
done
