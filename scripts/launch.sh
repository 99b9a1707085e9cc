#!/usr/bin/env bash
# Workstation launcher, no Slurm: runs slurm/train.sbatch directly (the same checks, mpiexec instead of srun).
#   scripts/launch.sh -n RANKS [--deck D] [--tp N] [--pp N] [--dp N] [--steps N] [--every K] [--run-dir DIR]
#                     [--time-limit S] [--restarts R] [--on-loss replan --ranks-available FILE]
#                     [-- section.key=value ...]
# --time-limit S gives every attempt S seconds, then SIGUSR1 (the trainer checkpoints and exits 75), like a
# Slurm time limit; with --restarts R the run is restarted from the newest checkpoint up to R times until it
# has finished: the workstation form of slurm/chain.sh.
# --on-loss replan continues after a lost rank (issue 25): an attempt that fails (exit other than 0 or 75) is
# restarted, up to R times, on the ranks FILE says remain (a workstation has no scheduler to tell it; a health
# check, an operator or a test writes the number there), from the newest checkpoint, with a layout re-planned for
# them and the global batch kept (slurm/train.sbatch GT_REPLAN=1, scripts/replan.py).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$here/slurm/run_options.sh"
limit=""; restarts=0; on_loss=""; available=""
while [ $# -gt 0 ]; do
  case $1 in
    -n|--ranks) export GT_RANKS=$2; shift ;;
    --time-limit) limit=$2; shift ;;
    --restarts) restarts=$2; shift ;;
    --on-loss) on_loss=$2; shift ;;
    --ranks-available) available=$2; shift ;;
    --) shift; export GT_ARGS="${GT_ARGS:+$GT_ARGS }$*"; break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) if gt_run_option "$@"; then shift; else
         echo "launch.sh: error: unknown option '$1' (see --help)" >&2; exit 2
       fi ;;
  esac
  shift
done
unset SLURM_JOB_ID   # inside an allocation this still runs the workstation way
case $on_loss in
  "") ;;
  replan) [ -n "$available" ] || { echo "launch.sh: error: --on-loss replan needs --ranks-available FILE" >&2; exit 2; } ;;
  *) echo "launch.sh: error: --on-loss '$on_loss': the only policy is replan" >&2; exit 2 ;;
esac
export GT_ROOT=${GT_ROOT:-$here}
export GT_RUN_DIR=${GT_RUN_DIR:-$here/runs/local/$(date +%Y%m%d-%H%M%S)-$$}
[[ $GT_RUN_DIR == /* ]] || GT_RUN_DIR=$PWD/$GT_RUN_DIR

attempt=0
while :; do
  rc=0
  if [ -n "$limit" ]; then
    timeout --preserve-status --signal=USR1 --kill-after=120 "$limit" "$here/slurm/train.sbatch" || rc=$?
  else
    "$here/slurm/train.sbatch" || rc=$?
  fi
  [ "$attempt" -lt "$restarts" ] || exit "$rc"
  if [ "$rc" -ne 75 ]; then
    [ "$rc" -ne 0 ] && [ "$on_loss" = replan ] || exit "$rc"
    left=$(cat "$available" 2>/dev/null) && [[ $left =~ ^[1-9][0-9]*$ ]] ||
      { echo "launch.sh: error: the attempt failed (exit $rc) and $available holds no rank count" >&2; exit "$rc"; }
    export GT_RANKS=$left GT_REPLAN=1
    echo "launch.sh: the attempt failed (exit $rc); continuing on the $left ranks $available says remain"
  fi
  attempt=$((attempt + 1))
  echo "launch.sh: restart $attempt of $restarts from the newest checkpoint in $GT_RUN_DIR"
done
