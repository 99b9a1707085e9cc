#include "src/train/adapt/rebalancer.hpp"

#include <algorithm>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/plan/rebalance.hpp"

namespace gt {

namespace {

std::string list_ms(const std::vector<double>& s) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < s.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.1f", i ? ", " : "", s[i] * 1e3);
    out += buf;
  }
  return out + "] ms";
}

std::string list_blocks(const std::vector<int>& begin) {
  std::string out;
  for (size_t s = 0; s + 1 < begin.size(); ++s) out += (s ? "," : "") + std::to_string(begin[s + 1] - begin[s]);
  return out;
}

}  // namespace

std::vector<int> stage_partition(const Config& cfg, int pp) {
  const std::vector<int> counts = cfg.parallel.stage_block_counts();
  if (counts.empty()) {
    if (cfg.model.n_layer < pp)
      throw Error("pipeline: model.n_layer (" + std::to_string(cfg.model.n_layer) + ") is smaller than parallel.pp (" +
                  std::to_string(pp) + "): every stage needs at least one block");
    return plan::modelled_partition(plan::ModelShape::from(cfg.model), pp);
  }
  if (int(counts.size()) != pp)
    throw Error("config key 'parallel.stage_blocks' = \"" + cfg.parallel.stage_blocks + "\" names " +
                std::to_string(counts.size()) + " stages, the grid has parallel.pp = " + std::to_string(pp));
  std::vector<int> begin{0};
  for (int c : counts) begin.push_back(begin.back() + c);
  return begin;
}

Rebalancer::Rebalancer(const Config& cfg, Grid& grid, StageModel& model, std::vector<int> partition)
    : cfg_(cfg), grid_(grid), model_(model), partition_(std::move(partition)) {
  const bool deciding = cfg_.choices().rebalance == RebalanceMode::Auto && grid_.shape().pp > 1;
  if (!deciding && cfg_.parallel.rebalanced_from.empty()) return;
  timer_ = std::make_unique<BlockTimer>(cfg_.model.n_layer);
  model_.set_unit_timer([t = timer_.get()](int u, bool start) { t->mark(u, start); });
}

Rebalancer::~Rebalancer() {
  if (timer_) model_.set_unit_timer({});
}

bool Rebalancer::after_step(int steps_this_run) {
  if (!timer_) return false;
  timer_->end_step();
  if (steps_this_run < cfg_.parallel.rebalance_after) return false;
  // Every unit's slowest time over the world (TP and DP ranks of a stage wait for the slowest of them).
  std::vector<double> t = timer_->best();
  grid_.world().allreduce(t.data(), t.size(), DType::F64, ReduceOp::Max);
  model_.set_unit_timer({});
  timer_.reset();
  const int L = cfg_.model.n_layer;
  const std::vector<double> blocks(t.begin() + 1, t.begin() + 1 + L);
  const plan::RebalanceProposal p =
      plan::propose_rebalance(blocks, t[0], t[size_t(L) + 1], partition_, cfg_.parallel.rebalance_gain);
  const bool root = grid_.world_rank() == 0;
  if (!cfg_.parallel.rebalanced_from.empty()) {  // the run after a rebalance: only report what it achieved
    if (root)
      std::printf("gridtrain: rebalanced: stage forward+backward times now %s on blocks %s (%s)\n",
                  list_ms(p.current_cost).c_str(), list_blocks(partition_).c_str(),
                  cfg_.parallel.rebalanced_from.c_str());
    return false;
  }
  char gain[96];
  std::snprintf(gain, sizeof gain, "gain %.2f %s threshold %.2f", p.gain, p.worth ? ">=" : "<",
                1.0 + cfg_.parallel.rebalance_gain);
  report_ = "before: " + list_ms(p.current_cost) + " on blocks " + list_blocks(p.current) + ", predicted " +
            list_ms(p.proposed_cost) + " on blocks " + list_blocks(p.proposed) + ", " + gain;
  if (root)
    std::printf("gridtrain: rebalance after %d steps: stage forward+backward times %s on blocks %s; balanced: %s on "
                "blocks %s; %s: %s\n",
                steps_this_run, list_ms(p.current_cost).c_str(), list_blocks(p.current).c_str(),
                list_ms(p.proposed_cost).c_str(), list_blocks(p.proposed).c_str(), gain,
                p.worth ? "continuing on the new partition" : "keeping the partition");
  std::fflush(stdout);
  if (!p.worth || p.proposed == p.current) return false;
  proposed_ = p.proposed;
  return true;
}

std::string Rebalancer::proposed_blocks() const { return list_blocks(proposed_); }

}  // namespace gt
