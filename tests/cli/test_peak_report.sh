#!/usr/bin/env bash
# MFU's denominator on CPU builds (src/train/report/host_peak.hpp, src/core/peak_cache.hpp), in runs of the tiny preset:
#   - a run measures the core's peak, writes the per-user cache (XDG_CACHE_HOME) and prints where the figure
#     came from; summary.json's mfu is exactly flops_per_token x tokens_per_s / (peak x ranks), so MFU moves
#     only with tokens/s (the defect: one run read 0.959, the next 0.621, for tokens/s 3498 vs 3054);
#   - a cached figure above anything measurable (planted: 1e6 GFLOP/s) is the one used, by one rank and by two
#     (every rank agrees), and a later run does not lower it: the cache keeps the best figure;
#   - an unwritable cache is no error: the run says it did not cache, and still reports MFU.
#   test_peak_report.sh GRIDTRAIN MPIEXEC
common=(train --config tiny train.steps=3 output.log_every=1 checkpoint.save_final=false)
TAG=peak
source "$(dirname "$0")/../common/train_runs.sh"
export XDG_CACHE_HOME="$work/cache"
cache="$XDG_CACHE_HOME/gridtrain/peak_flops.tsv"

# mfu against the summary's own figures; prints the peak used
check_mfu() {
  python3 - "$work/$1/summary.json" <<'PY' || fail "$1: $(tail -2 "$work/$1.log")"
import json, sys
s = json.load(open(sys.argv[1]))
want = s["flops_per_token"] * s["tokens_per_s"] / (s["peak_gflops_per_rank"] * 1e9 * s["world_size"])
# the same formula in the same order of operations up to one division: agreement to a few ulps
assert abs(s["mfu"] - want) <= 1e-12 * want, (s["mfu"], want)
assert s["peak_kind"].startswith("fp32 peak ("), s["peak_kind"]
assert s["peak_provenance"], "no provenance in summary.json"
print("%.3f" % s["peak_gflops_per_rank"])
PY
}

run_np 1 first
peak1=$(check_mfu first) || exit 1
[ -f "$cache" ] || fail "no cache file at $cache"
[ "$(wc -l <"$cache")" -eq 1 ] || fail "the cache should hold one fp32 record: $(cat "$cache")"
grep -q "gridtrain: peak from .*cache $cache" "$work/first.log" || fail "no provenance line: $(grep peak "$work/first.log")"
grep -q "this run measured" "$work/first.log" || fail "the provenance does not give this run's figure"

# plant a figure no core reaches: the runs must use it, on every rank, and keep it
awk -F'\t' 'BEGIN{OFS="\t"} {$3="1000000"; print}' "$cache" >"$cache.new" && mv "$cache.new" "$cache"
run_np 1 planted
[ "$(check_mfu planted)" = "1000000.000" ] || fail "one rank did not use the cached peak: $(check_mfu planted)"
run_np 2 planted2 parallel.dp=2
[ "$(check_mfu planted2)" = "1000000.000" ] || fail "two ranks did not use the cached peak: $(check_mfu planted2)"
[ "$(cut -f3 "$cache")" = "1000000.000" ] || fail "a lower measurement replaced the cached best: $(cat "$cache")"
[ "$(cut -f7 "$cache")" -ge 3 ] || fail "the runs count was not kept: $(cat "$cache")"

# a cache that cannot be written: the run still reports, and says so
export XDG_CACHE_HOME=/proc/gridtrain-no-such-dir
run_np 1 nocache
check_mfu nocache >/dev/null || exit 1
grep -q "not cached: " "$work/nocache.log" || fail "an unwritable cache was not reported: $(grep peak "$work/nocache.log")"
echo "peak report ok (first run measured $peak1 GFLOP/s per rank)"
