#!/usr/bin/env python3
"""The longest functions of src/ and kernels/ (issue #20's target: at most 80 lines, Trainer's constructor 60).

Lines are counted from a function's first line to its closing brace, as Universal Ctags reports them (`end`
field), so comments and blank lines inside a body count. Prints the N longest and how many exceed the limit;
exit 1 with --check when any does (not run in CI: a target we are working towards, not yet a rule).
  scripts/function_lengths.py [--top N] [--limit L] [--check] [DIR...]
"""
import argparse
import json
import subprocess
import sys


def functions(dirs):
    out = subprocess.run(["ctags", "--output-format=json", "--fields=+ne", "--c++-kinds=f", "--languages=C++",
                          "-R", *dirs], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        t = json.loads(line)
        if t.get("_type") == "tag" and "end" in t:
            scope = t.get("scope", "")
            name = f"{scope.split('::')[-1]}::{t['name']}" if t.get("scopeKind") in ("class", "struct") else t["name"]
            yield t["end"] - t["line"] + 1, t["path"], t["line"], name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("dirs", nargs="*", default=["src", "kernels"])
    a = ap.parse_args()
    fs = sorted(functions(a.dirs), reverse=True)
    over = [f for f in fs if f[0] > a.limit]
    for n, path, line, name in fs[:a.top]:
        print(f"{n:5d}  {path}:{line}  {name}")
    print(f"{len(over)} of {len(fs)} functions exceed {a.limit} lines")
    return 1 if (a.check and over) else 0


if __name__ == "__main__":
    sys.exit(main())
