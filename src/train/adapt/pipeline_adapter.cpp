#include "src/train/adapt/pipeline_adapter.hpp"

#include <cstdio>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_agree.hpp"
#include "src/train/report/metrics.hpp"
#include "src/train/adapt/straggler_monitor.hpp"  // stage_of_every_rank

namespace gt {

namespace {

AdaptSettings settings(const Config& cfg) {
  AdaptSettings s;
  s.gain_threshold = cfg.parallel.rebalance_gain;
  s.interval = cfg.parallel.adapt_interval;
  s.total_steps = cfg.train.steps;
  return s;
}

std::string ms_list(const std::vector<double>& v) { return number_list(v, 2); }

std::string decision_json(int step, const AdaptDecision& d) {
  JsonObject j;
  j.integer("step", step).str("action", d.move ? "move" : "keep").str("from_blocks", stage_blocks_text(d.current))
      .str("to_blocks", stage_blocks_text(d.proposed)).raw("stage_ms", ms_list(d.stage_ms))
      .raw("predicted_ms", ms_list(d.predicted_ms)).num("predicted_gain", d.gain)
      .num("needed_gain", d.needed).num("noise_spread", d.noise).str("predicted_by", d.predicted_from_measurement ? "measurement" : "model")
      .num("saved_ms_over_steps_left", d.saved_ms).num("move_cost_ms", d.cost_ms);
  return j.dump();
}

}  // namespace

void check_adapt_rebalance(const Config& cfg, int pp) {
  const ConfigChoices c = cfg.choices();
  std::string why;
  if (pp < 2) why = "it moves blocks between pipeline stages and parallel.pp = " + std::to_string(pp);
  else if (c.schedule == PipelineSchedule::Interleaved) why = "parallel.schedule = \"interleaved\" fixes the blocks of each stage";
  else if (c.sparsity != SparsityPattern::None) why = "the move does not carry 2:4 sparsity masks yet";
  else if (c.compress == CompressMethod::TopK) why = "the move does not carry top-k error-feedback residuals yet";
  if (!why.empty()) throw Error("config: parallel.adapt = \"rebalance\" cannot run here: " + why);
}

PipelineAdapter::PipelineAdapter(const Config& cfg, Grid& grid, std::vector<int> partition, AdaptCarry carry)
    : grid_(grid),
      decider_(settings(cfg), stage_of_every_rank(grid), plan::modelled_unit_costs(plan::ModelShape::from(cfg.model)),
               std::move(partition), std::move(carry.history)),
      decisions_(std::move(carry.decisions)) {}

bool PipelineAdapter::after_step(int step, const std::vector<double>& compute_ms, StepStats* s) {
  const AdaptDecision d = decider_.observe(step, compute_ms);
  if (!d.evaluated) return false;
  AdaptDecision mine = d;  // the agreement: world rank 0's decision is every rank's
  mine.move = agree_with_rank0(grid_.world(), d.move, &mine.proposed);
  s->adapt_json = decision_json(step, mine);
  decisions_.push_back(s->adapt_json);
  if (grid_.world_rank() == 0) {
    std::printf("gridtrain: step %d: adapt: stage compute %s ms on blocks %s; balanced for the measured speeds: %s ms "
                "on blocks %s (predicted by the %s); gain %.2f, threshold %.2f (noise spread %.2f); saves %.0f ms over the steps left, a move "
                "costs %.0f ms (it must save twice that): %s\n",
                step, ms_list(mine.stage_ms).c_str(), stage_blocks_text(mine.current).c_str(),
                ms_list(mine.predicted_ms).c_str(), stage_blocks_text(mine.proposed).c_str(),
                mine.predicted_from_measurement ? "measurement of that partition" : "model", mine.gain,
                mine.needed, mine.noise, mine.saved_ms, mine.cost_ms, mine.move ? "moving blocks" : "keeping the partition");
    std::fflush(stdout);
  }
  if (mine.move) proposed_ = mine.proposed;
  return mine.move;
}

std::string PipelineAdapter::decisions_json() const {
  return json_list(decisions_);
}

}  // namespace gt
