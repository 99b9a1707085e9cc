# Sourced by the shell tests that run every check and count the failures (instead of stopping at the first, as
# tests/common/train_runs.sh does): a scratch folder $work removed on exit, ok/fail, and the verdict.
# Needs: TAG (the scratch folder's name).
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_${TAG}_XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# The test's exit status: 0 only if no check failed.
verdict() {
  echo "$failures failure(s)"
  [ "$failures" -eq 0 ]
}
