#pragma once
// A per-user cache of measured per-core peaks (kernels/peak_flops.hpp), keyed by the CPU model and the
// instruction measured, so that MFU has the same denominator from one run to the next.
//
// Why: a peak measured at start-up moves with the machine's load, and MFU moved with it (the same `small` dp=2
// fp32 run read MFU 0.959 once and 0.621 the next time, for tokens/s 3498 and 3054). Load only ever lowers a
// measurement, so the cache keeps the best figure ever measured for this CPU model: a run uses
// max(cached, measured now) and writes the new figure back when it is higher. After the first quiet
// measurement the denominator is fixed, and MFU moves exactly as tokens/s does.
//
// File: $XDG_CACHE_HOME/gridtrain/peak_flops.tsv, else $HOME/.cache/gridtrain/peak_flops.tsv; one line per
// (cpu, isa): cpu <TAB> isa <TAB> gflops <TAB> measured-at (UTC) <TAB> host <TAB> trials <TAB> runs.
// Written whole through a temporary file and a rename, so a reader never sees half a file; two runs
// finishing together may lose one update (the lower or equal one is the usual loser: both merged the file
// they read), which costs nothing but a re-measurement next time.
#include <string>

namespace gt {

struct PeakRecord {
  std::string cpu, isa;    // the key: cpu_identity() and the instruction ("avx512 fma")
  double gflops = 0;       // the best figure measured for this key
  std::string measured_at; // when that figure was measured (UTC, ISO 8601)
  std::string host;        // where it was measured
  int trials = 0;          // trials of that measurement (kernels/peak_flops.hpp)
  int runs = 0;            // how many runs have measured this key (each run's figure merged by max)
};

// "<model name> (family F model M stepping S)" from /proc/cpuinfo: cloud VMs often report a model name
// without the generation ("AMD EPYC"), which the family/model numbers give. "unknown cpu" if unreadable.
std::string cpu_identity();

// The cache file's path from the environment; "" when neither XDG_CACHE_HOME nor HOME is set.
std::string peak_cache_path();

// The record for (cpu, isa) in the file at `path`; gflops = 0 when there is none (no file, no line, or a line
// that does not parse: the cache is a convenience, never an error).
PeakRecord read_peak_record(const std::string& path, const std::string& cpu, const std::string& isa);

// Merges a fresh measurement into the file: the record in force afterwards is the cached one when it is at
// least as high (its runs count + 1), else the measurement (runs = cached runs + 1). Writes the file when
// anything changed; on a write failure (read-only home, ...) returns the merged record anyway and sets
// *write_error to why. `measured` carries cpu, isa, gflops, host and trials; measured_at is stamped here.
PeakRecord merge_peak_record(const std::string& path, const PeakRecord& measured, std::string* write_error);

// The provenance for the start line: "the best of 3 runs (each the best of 16 trials), measured
// 2026-12-04T10:00:00Z on host, cache /home/u/.cache/gridtrain/peak_flops.tsv".
std::string describe_peak_record(const PeakRecord& r, const std::string& path);

}  // namespace gt
