#!/usr/bin/env bash
# A/B of the per-core peak measurement behind MFU (kernels/peak_flops.cpp): the version at an older commit
# against the working tree's, alternated in one process, N rounds; then two such processes at once (two
# ranks measuring on a shared machine). Prints each pair and writes them to $OUT/peak_ab.txt.
#   scripts/bench_peak_ab.sh [OLD_COMMIT (default db478c1: wall clock, 5 x 20 ms)] [N (default 8)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
old=${1:-db478c1} n=${2:-8}
out=${OUT:-$here/runs/bench/peak_ab}; mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git -C "$here" show "$old:kernels/peak_flops.cpp" | sed 's/namespace gt {/namespace old {/; s#"kernels/peak_flops.hpp"#"old_peak.hpp"#' >"$tmp/old_peak.cpp"
git -C "$here" show "$old:kernels/peak_flops.hpp" | sed 's/namespace gt {/namespace old {/' >"$tmp/old_peak.hpp"
cat >"$tmp/ab.cpp" <<'CPP'
#include <cstdio>
#include <cstdlib>
#include "kernels/peak_flops.hpp"
#include "old_peak.hpp"
int main(int argc, char** argv) {
  for (int i = 0, n = std::atoi(argv[1]); i < n; ++i) {
    const double o = old::measure_peak_flops().fp32_gflops, p = gt::measure_peak_flops().fp32_gflops;
    std::printf("old %.1f new %.1f\n", o, p);
  }
}
CPP
g++ -O2 -std=c++17 -I"$here" -I"$tmp" "$tmp/ab.cpp" "$tmp/old_peak.cpp" "$here/kernels/peak_flops.cpp" -o "$tmp/ab"
{
  echo "# $(date -u +%FT%TZ) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) | $(nproc) cpus | load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# fp32 FMA peak, GFLOP/s per core: $old vs working tree, one process"
  "$tmp/ab" "$n"
  echo "# two processes at once (columns: process A, process B)"
  "$tmp/ab" "$n" >"$tmp/a" & "$tmp/ab" "$n" >"$tmp/b"; wait
  paste "$tmp/a" "$tmp/b"
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/peak_ab.txt"
