# Sourced by the shell tests: a scratch folder $work removed however the test ends, and fail (one line, exit 1:
# the test stops at its first failed check). Needs: TAG (the scratch folder's name).
work=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_${TAG}_XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
