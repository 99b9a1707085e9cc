#include "src/train/schedule.hpp"

#include <algorithm>
#include <limits>

#include "src/core/error.hpp"
#include "src/plan/rebalance.hpp"

namespace gt {

Schedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return Schedule::GPipe;
  if (name == "1f1b") return Schedule::OneFOneB;
  if (name == "interleaved") return Schedule::Interleaved;
  throw Error("unknown pipeline schedule '" + name + "' (expected \"1f1b\", \"gpipe\" or \"interleaved\")");
}

namespace {

std::vector<PipeOp> interleaved(int p, int stage, int m, int v) {
  if (v < 1 || m % p != 0)
    throw Error("pipeline: the interleaved schedule needs the micro-batches (" + std::to_string(m) +
                ") a multiple of the stages (" + std::to_string(p) + ") and at least one chunk per stage");
  const int total = m * v, group = p * v;
  auto forward = [&](int k) { return PipeOp{PipeOp::Forward, (k / group) * p + k % p, (k % group) / p}; };
  auto backward = [&](int k) { return PipeOp{PipeOp::Backward, (k / group) * p + k % p, v - 1 - (k % group) / p}; };
  const int warmup = std::min(total, 2 * (p - stage - 1) + (v - 1) * p);
  std::vector<PipeOp> ops;
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back(forward(f));
  while (f < total) {
    ops.push_back(forward(f++));
    ops.push_back(backward(b++));
  }
  while (b < total) ops.push_back(backward(b++));
  return ops;
}

}  // namespace

std::vector<PipeOp> pipeline_schedule(Schedule s, int stages, int stage, int m, int chunks) {
  if (s == Schedule::Interleaved && chunks > 1) return interleaved(stages, stage, m, chunks);
  std::vector<PipeOp> ops;
  if (s == Schedule::GPipe) {
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Forward, i});
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Backward, i});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({PipeOp::Forward, f});
  while (f < m) {
    ops.push_back({PipeOp::Forward, f++});
    ops.push_back({PipeOp::Backward, b++});
  }
  while (b < m) ops.push_back({PipeOp::Backward, b++});
  return ops;
}

int max_in_flight(const std::vector<PipeOp>& ops) {
  int live = 0, peak = 0;
  for (const PipeOp& op : ops) {
    live += op.kind == PipeOp::Forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

double bubble_fraction(int p, int m) { return double(p - 1) / double(m + p - 1); }

std::vector<int> partition_stages(int blocks, int stages, double block_cost, double first_extra, double last_extra) {
  if (stages <= 0) throw Error("pipeline: parallel.pp must be positive");
  if (blocks < stages)
    throw Error("pipeline: model.n_layer (" + std::to_string(blocks) + ") is smaller than parallel.pp (" +
                std::to_string(stages) + "): every stage needs at least one block");
  // The planner's linear-partition DP over per-block costs (it also rebalances from measured times).
  return plan::partition_by_cost(std::vector<double>(blocks, block_cost), stages, first_extra, last_extra);
}

}  // namespace gt
