#include "src/train/schedule.hpp"

#include <algorithm>
#include <limits>

#include "src/core/error.hpp"

namespace gt {

Schedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return Schedule::GPipe;
  if (name == "1f1b") return Schedule::OneFOneB;
  throw Error("unknown pipeline schedule '" + name + "' (expected \"1f1b\" or \"gpipe\")");
}

std::vector<PipeOp> pipeline_schedule(Schedule s, int stages, int stage, int m) {
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
  // best[s][b]: smallest possible max cost placing the first b blocks on the first s stages.
  const double inf = std::numeric_limits<double>::infinity();
  auto cost = [&](int s, int nb) {
    double c = nb * block_cost;
    if (s == 0) c += first_extra;
    if (s == stages - 1) c += last_extra;
    return c;
  };
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(blocks + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(blocks + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s)
    for (int b = s; b <= blocks - (stages - s); ++b)
      for (int a = s - 1; a < b; ++a) {
        if (best[s - 1][a] == inf) continue;
        double v = std::max(best[s - 1][a], cost(s - 1, b - a));
        // ties: prefer the earlier cut, so that extra blocks go to later stages only when it helps
        if (v < best[s][b] - 1e-12) {
          best[s][b] = v;
          cut[s][b] = a;
        }
      }
  std::vector<int> begin(stages + 1);
  begin[stages] = blocks;
  for (int s = stages, b = blocks; s > 0; --s) {
    b = cut[s][b];
    begin[s - 1] = b;
  }
  return begin;
}

}  // namespace gt
