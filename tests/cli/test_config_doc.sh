#!/usr/bin/env bash
# docs/config.md's key table is what `gridtrain keys --doc` prints from the schema (src/core/config_schema.cpp): one
# source for the keys, their types, choices, defaults and one-line docs. A key added, renamed or documented
# in the code and not in the doc (or the reverse) fails here; scripts/update_config_doc.sh regenerates.
# Also: every key of `gridtrain keys` is in the table once, and every row has a non-empty doc.
#   test_config_doc.sh GRIDTRAIN SOURCE_DIR
set -u
bin=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
got=$("$bin" keys --doc) || fail "gridtrain keys --doc failed"
want=$(sed -n '/^<!-- begin: gridtrain keys --doc -->$/,/^<!-- end: gridtrain keys --doc -->$/p' "$src/docs/config.md" | sed '1d;$d')
[ -n "$want" ] || fail "docs/config.md has no generated key table (markers missing)"
if [ "$got" != "$want" ]; then
  diff <(echo "$want") <(echo "$got") | head -20
  fail "docs/config.md differs from gridtrain keys --doc: run scripts/update_config_doc.sh"
fi
python3 - "$got" <<'PY' || exit 1
import sys
rows = [l for l in sys.argv[1].splitlines()[2:] if l.startswith("| `")]
keys = [r.split("`")[1] for r in rows]
assert len(keys) == len(set(keys)), "a key twice in the table"
for r in rows:
    cells = [c.strip() for c in r.strip("|").split(" | ")]
    assert len(cells) == 4 and cells[3], f"row without a doc or with a stray '|': {r}"
print(len(keys), "keys documented")
PY
toml_keys=$("$bin" keys | awk -F' = ' '/^\[/{s=substr($0,2,length($0)-2); next} NF>1{print s"."$1}' | sort)
doc_keys=$(echo "$got" | awk -F'`' '/^\| `/{print $2}' | sort)
[ "$toml_keys" = "$doc_keys" ] || fail "gridtrain keys and keys --doc list different keys: $(diff <(echo "$toml_keys") <(echo "$doc_keys"))"
"$bin" keys --bogus >/dev/null 2>&1 && fail "keys --bogus was accepted"
echo "config doc ok"
