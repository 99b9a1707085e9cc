#pragma once
// Fits a machine's constants from finished runs (each run directory's summary.json and config.toml): the GEMM
// efficiency (one figure for every size), the memory efficiency (from the optimizer's time), the TP
// all-reduce latency and bandwidth (alpha, beta, from the exposed TP time) and the per-step overhead (what
// is left of the step). The result is the base description with those keys replaced.
#include <map>
#include <string>
#include <vector>

#include "src/core/json.hpp"
#include "src/plan/cluster.hpp"
#include "src/plan/layout.hpp"

namespace gt::plan {

// What one run measured (ms per step, means over its steps) and what it ran.
struct RunSample {
  std::string dir;
  ModelShape model;
  Layout layout;
  double step_ms = 0, compute_ms = 0 /* forward + backward */, optimizer_ms = 0, tp_ms = 0;
  double dp_ms = -1;  // comm_dp_ms (-1: the summary has none)
  // compute_ms is the slowest stage's own forward and backward, its pipeline waits left out (a running trainer's
  // measurement: parallel.adapt = full, src/train/adapt/layout_predict.hpp), so a pp > 1 run fits the GEMM efficiency
  // too. A summary's forward_ms + backward_ms include the waits: only pp = 1 runs fit it then.
  bool stage_compute = false;
};

// One all-reduce timing of bench_allreduce (its figures file, runs/bench/allreduce.json): ranks, bytes, seconds.
struct LinkSample {
  int ranks = 2;
  double bytes = 0, seconds = 0;
};
// The rows of one algorithm ("mpi", "ring", "shm", "shm-reg": the trainer's DP path on one node with
// parallel.allreduce = auto is shm-reg) of a bench_allreduce figures file; throws gt::Error naming the file.
std::vector<LinkSample> read_allreduce_bench(const std::string& path, const std::string& algo);

using ::gt::parse_flat_json;  // src/core/json.hpp: summary.json's reader lives with the other JSON code

RunSample read_run(const std::string& dir);  // throws gt::Error naming the file and the missing key

struct Calibration {
  Cluster cluster;
  std::vector<std::string> notes;  // what was fitted from how many runs, and what was kept from the base
};

// Least squares over the runs (docs/planner.md): needs at least one pp = 1 run. The node link's alpha/beta come
// from one joint fit of every TP time (tp > 1 runs), DP time (dp > 1 runs) and all-reduce benchmark row given
// (two or more distinct sizes for both, else alpha stays the base's). Runs are fp32 (what gridtrain trains).
Calibration calibrate(const std::vector<RunSample>& runs, const Cluster& base,
                      const std::vector<LinkSample>& allreduce_bench = {});

}  // namespace gt::plan
