#!/usr/bin/env bash
# Soak (issue 14): STEPS steps of `tiny` with a checkpoint every EVERY steps on one rank; samples the process's
# resident set every second and prints, per window of EVERY steps, the mean step time (metrics.jsonl) and the
# RSS at the window's end, then the ratios last/first. Figures, not assertions (the machine may be loaded).
#   scripts/soak.sh [GRIDTRAIN] [STEPS] [EVERY] [OUT_DIR]
set -u
bin=${1:-build/src/cli/gridtrain} steps=${2:-3000} every=${3:-250}
out=${4:-$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_soak_XXXXXX")}
rm -rf "$out/run"; mkdir -p "$out"
"$bin" train --config tiny train.steps="$steps" checkpoint.every="$every" output.log_every="$every" \
  output.dir="$out/run" >"$out/log" 2>&1 &
pid=$!
: >"$out/rss"
while kill -0 $pid 2>/dev/null; do
  s=$( (wc -l <"$out/run/metrics.jsonl") 2>/dev/null || echo 0)
  r=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
  [ -n "$r" ] && echo "$s $r" >>"$out/rss"
  sleep 1
done
wait $pid; code=$?
python3 - "$out" "$every" "$code" <<'PY'
import json, sys
out, every, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ms = [json.loads(l)["ms"] for l in open(out + "/run/metrics.jsonl")]
rss = [tuple(map(int, l.split())) for l in open(out + "/rss") if l.strip()]
print(f"exit {code}, {len(ms)} steps; window | mean ms/step | RSS MiB at window end")
rows = []
for w in range(0, len(ms), every):
    sl = ms[w:w + every]
    r = [kb for s, kb in rss if s <= w + every]
    rows.append((w + len(sl), sum(sl) / len(sl), (r[-1] if r else 0) / 1024))
    print(f"{w + 1:5d}-{w + len(sl):5d} | {rows[-1][1]:8.2f} | {rows[-1][2]:8.1f}")
# the first window holds the warm-up: compare the second with the last
a, b = rows[1] if len(rows) > 2 else rows[0], rows[-1]
print(f"last/second window: step time x{b[1] / a[1]:.3f}, RSS x{b[2] / a[2]:.3f} (peak RSS {max(kb for _, kb in rss) / 1024:.1f} MiB)")
PY
