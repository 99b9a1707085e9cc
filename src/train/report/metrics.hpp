#pragma once
// The small tools the run report and the benches write with: a JSON object writer, atomic file writes and
// make_dirs, the process's peak RSS and PSS, and a single-core sgemm rate (measure_sgemm_gflops). What a run
// reports (the step line, metrics.jsonl, summary.json) is src/train/report/run_report.hpp.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "src/core/json.hpp"              // JsonObject, json_escape: what the reports write with
#include "src/io/checkpoint_files.hpp"  // write_file_atomic: summaries and config.toml as checkpoints' `latest`

namespace gt {

void make_dirs(const std::string& path);

// Peak resident set size of this process in bytes.
double peak_rss_bytes();
// Proportional set size now (/proc/self/smaps_rollup), in bytes; -1 where the kernel does not say. Pages shared
// between processes count 1/n in each of the n that map them: with ZeRO's buffers in the DP group's shared
// region (src/comm/node_shm.hpp) a rank maps the pages of the peers' shards it reads, which its RSS counts in full.
double pss_bytes();

// Achieved single-core sgemm rate (GFLOP/s) on n x n x n products: the MFU ceiling we measure ourselves.
double measure_sgemm_gflops(int n, int reps);

}  // namespace gt
