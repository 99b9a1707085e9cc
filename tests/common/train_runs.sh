# Sourced by the training shell tests: a scratch directory removed on exit, and runs of the trainer.
# Needs: bin (gridtrain), mpiexec, common (array: the arguments every run shares), TAG (the scratch name).
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_${TAG}_XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# run_np NP NAME overrides...: a run that must succeed; its output in $work/NAME, its log in $work/NAME.log.
run_np() {
  local np=$1 name=$2; shift 2
  "$mpiexec" -n "$np" "$bin" "${common[@]}" output.dir="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name run failed: $(tail -3 "$work/$name.log")"
}
# The per-step losses of a run, one per line, and its final loss (repr: every bit).
losses() { python3 -c 'import json,sys
for l in open(sys.argv[1]+"/metrics.jsonl"): print(repr(json.loads(l)["loss"]))' "$work/$1"; }
final() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]+"/summary.json"))["final_loss"]))' "$work/$1"; }
# bad_run NP WHAT KEY overrides...: must fail, with an error naming KEY.
bad_run() {
  local np=$1 what=$2 key=$3; shift 3
  "$mpiexec" -n "$np" "$bin" "${common[@]}" output.dir="$work/bad" "$@" >"$work/bad.log" 2>&1 && fail "$what was accepted"
  grep -q "$key" "$work/bad.log" || fail "the error for $what does not name $key: $(tail -2 "$work/bad.log")"
}
