# Sourced by scripts/launch.sh and slurm/submit.sh: the run options both take, each exported as the GT_* variable
# slurm/train.sbatch reads (one list, so the workstation launcher and the Slurm submitter cannot drift apart).
# gt_run_option OPTION VALUE [...]: exports it and returns 0; returns 1 for an option that is not a run option.
gt_run_option() {
  local var
  case $1 in
    --deck) var=GT_DECK ;;
    --tp) var=GT_TP ;;
    --pp) var=GT_PP ;;
    --dp) var=GT_DP ;;
    --steps) var=GT_STEPS ;;
    --every) var=GT_CKPT_EVERY ;;
    --run-dir) var=GT_RUN_DIR ;;
    --bin) var=GT_BIN ;;
    *) return 1 ;;
  esac
  [ $# -ge 2 ] || { echo "$(basename "$0"): error: $1 needs a value" >&2; exit 2; }
  export "$var=$2"
}
