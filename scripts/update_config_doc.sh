#!/usr/bin/env bash
# Regenerates the key table of docs/config.md from the schema (`gridtrain keys --doc`, src/core/config.cpp):
# the text between the two marker lines is replaced, the rest of the file is kept. The test cli_config_doc
# fails when the two differ.
#   scripts/update_config_doc.sh [GRIDTRAIN (default build/src/cli/gridtrain)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/src/cli/gridtrain}
doc=$here/docs/config.md
table=$(mktemp); trap 'rm -f "$table" "$doc.new"' EXIT
"$bin" keys --doc >"$table"
python3 - "$doc" "$table" <<'PY'
import sys
doc, table = sys.argv[1], open(sys.argv[2]).read()
begin, end = "<!-- begin: gridtrain keys --doc -->", "<!-- end: gridtrain keys --doc -->"
text = open(doc).read()
if begin not in text or end not in text:
    sys.exit(f"{doc}: the markers {begin!r} and {end!r} are missing")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(doc + ".new", "w").write(head + begin + "\n" + table + end + tail)
PY
mv "$doc.new" "$doc"
echo "docs/config.md: key table regenerated"
