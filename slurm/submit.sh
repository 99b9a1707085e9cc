#!/usr/bin/env bash
# Submit slurm/train.sbatch with the allocation and the run given as options (or variables); prints the job id.
#   slurm/submit.sh [options] [-- section.key=value ...]
# Allocation (variable in brackets, default after =):
#   --nodes N [NODES=1; with --ntasks: as many as needed]            --gpus-per-node G [GPUS_PER_NODE=0: CPU build, one rank per core]
#   --tasks-per-node N [TASKS_PER_NODE=G, or 2 without GPUs]      --ntasks N [NTASKS: total, overrides]
#   --partition P [PARTITION]      --account A [ACCOUNT]          --time T [TIME_LIMIT=00:30:00]
#   --signal-lead S [SIGNAL_LEAD=120: seconds before the limit at which the trainer is told to checkpoint]
#   --job-name J [JOB_NAME=gridtrain]   --output F [OUTPUT: Slurm's log, default <run dir>/slurm-%j.out]
#   --dependency D                 --sbatch "ARGS" [SBATCH_ARGS: anything else for sbatch]
# Run (exported to the job as the GT_* variables documented in slurm/train.sbatch):
#   --deck D [GT_DECK=tiny]  --tp/--pp/--dp N [GT_TP/GT_PP/GT_DP]  --steps N [GT_STEPS]  --every K [GT_CKPT_EVERY]
#   --run-dir D [GT_RUN_DIR, default runs/slurm/<job name>-<timestamp>]   --bin PATH [GT_BIN]  --mpi P [GT_MPI]
#   --dry-run   print the sbatch command instead of running it
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$here/slurm/run_options.sh"

nodes=${NODES:-}; gpus=${GPUS_PER_NODE:-0}; tpn=${TASKS_PER_NODE:-}; ntasks=${NTASKS:-}
partition=${PARTITION:-}; account=${ACCOUNT:-}; time_limit=${TIME_LIMIT:-00:30:00}
lead=${SIGNAL_LEAD:-120}; job_name=${JOB_NAME:-gridtrain}; output=${OUTPUT:-}; dependency=""
extra=${SBATCH_ARGS:-}; dry=0; tpn_set=${TASKS_PER_NODE:+1}
overrides=()
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift ;;
    --gpus-per-node) gpus=$2; shift ;;
    --tasks-per-node) tpn=$2; tpn_set=1; shift ;;
    --ntasks) ntasks=$2; shift ;;
    --partition) partition=$2; shift ;;
    --account) account=$2; shift ;;
    --time) time_limit=$2; shift ;;
    --signal-lead) lead=$2; shift ;;
    --job-name) job_name=$2; shift ;;
    --output) output=$2; shift ;;
    --dependency) dependency=$2; shift ;;
    --sbatch) extra=$2; shift ;;
    --mpi) export GT_MPI=$2; shift ;;
    --dry-run) dry=1 ;;
    --) shift; overrides=("$@"); break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) if gt_run_option "$@"; then shift; else
         echo "submit.sh: error: unknown option '$1' (see --help)" >&2; exit 2
       fi ;;
  esac
  shift
done
[ -z "$ntasks" ] && [ -z "$nodes" ] && nodes=1
[ -z "$tpn" ] && { if [ "$gpus" -gt 0 ]; then tpn=$gpus; else tpn=2; fi; }

export GT_ROOT=${GT_ROOT:-$here}
if [ ${#overrides[@]} -gt 0 ]; then export GT_ARGS="${GT_ARGS:+$GT_ARGS }${overrides[*]}"; fi
if [ -z "${GT_RUN_DIR:-}" ]; then
  export GT_RUN_DIR=${GT_RUNS:-$GT_ROOT/runs/slurm}/$job_name-$(date +%Y%m%d-%H%M%S)-$$
fi
[[ $GT_RUN_DIR == /* ]] || GT_RUN_DIR=$PWD/$GT_RUN_DIR
[ -n "$output" ] || output=$GT_RUN_DIR/slurm-%j.out

args=(--parsable --job-name="$job_name" --time="$time_limit" --signal="B:USR1@$lead"
      --output="$output" --chdir="$GT_ROOT")
# the total always goes with --ntasks, so that it replaces the script's default (--ntasks=2)
if [ -n "$ntasks" ]; then
  args+=(--ntasks="$ntasks"); [ -n "$tpn_set" ] && args+=(--ntasks-per-node="$tpn")
else args+=(--ntasks=$((nodes * tpn)) --ntasks-per-node="$tpn"); fi
[ -n "$nodes" ] && args+=(--nodes="$nodes")
[ "$gpus" -gt 0 ] && args+=(--gpus-per-node="$gpus")
[ -n "$partition" ] && args+=(--partition="$partition")
[ -n "$account" ] && args+=(--account="$account")
[ -n "$dependency" ] && args+=(--dependency="$dependency")
# shellcheck disable=SC2206  # extra sbatch words on purpose
[ -n "$extra" ] && args+=($extra)

if [ $dry = 1 ]; then
  env | grep '^GT_' | sort
  echo sbatch "${args[@]}" "$here/slurm/train.sbatch"
  exit 0
fi
mkdir -p "$GT_RUN_DIR"   # before sbatch: Slurm cannot create the directory of --output
sbatch "${args[@]}" "$here/slurm/train.sbatch" | cut -d';' -f1
