#include "src/train/adapt/layout_adapter.hpp"

#include <cstdio>
#include <string>

#include "src/core/error.hpp"
#include "src/core/json.hpp"
#include "src/core/test_hooks.hpp"
#include "src/train/adapt/adapt_agree.hpp"
#include "src/train/adapt/layout_predict.hpp"
#include "src/train/adapt/straggler_monitor.hpp"  // stage_of_every_rank

namespace gt {

namespace {

std::string decision_json(const LayoutDecision& d, const std::string& why) {
  JsonObject j;
  j.integer("step", d.step).str("action", layout_action_name(d.action)).str("from_layout", layout_text(d.current))
      .str("to_layout", layout_text(d.to)).str("best_other_layout", layout_text(d.best))
      .num("measured_step_ms", d.measured_ms).num("noise_spread", d.noise).num("needed_gain", d.needed)
      .num("predicted_ms", d.predicted_now_ms).num("predicted_best_ms", d.predicted_best_ms)
      .num("predicted_gain", d.gain).integer("layouts_predicted", d.candidates);
  if (d.cost_ms > 0) j.num("saved_ms", d.saved_ms).num("switch_cost_ms", d.cost_ms);
  if (d.judged_step > 0)
    j.num("measured_gain_of_last_switch", d.measured_gain).num("predicted_gain_of_last_switch", d.promised_gain)
        .integer("last_switch_step", d.judged_step);
  if (!why.empty()) j.str("note", why);
  if (!d.reason.empty()) j.str("reason", d.reason);
  return j.dump();
}

LayoutSettings settings(const Config& cfg) {
  LayoutSettings s;
  s.interval = cfg.parallel.adapt_interval;
  s.threshold = cfg.parallel.rebalance_gain;
  s.total_steps = cfg.train.steps;
  return s;
}

// The guard's view of the stages: the rebalancing decider on this partition (its figure and bar alone are used);
// none at pp = 1 (one stage) or under the interleaved schedule (a stage's blocks are not one range).
std::unique_ptr<LayoutGuard> make_guard(const Config& cfg, Grid& grid, const std::vector<int>& partition) {
  if (grid.shape().pp == 1 || cfg.choices().schedule == PipelineSchedule::Interleaved)
    return std::make_unique<LayoutGuard>(settings(cfg).window, nullptr);
  const plan::ModelShape m = plan::ModelShape::from(cfg.model);
  AdaptSettings s;
  s.gain_threshold = cfg.parallel.rebalance_gain;  // as the pipeline adapter's decider
  auto balance = std::make_unique<AdaptDecider>(s, stage_of_every_rank(grid), plan::modelled_unit_costs(m), partition);
  // the equal-devices partition the guard measures the stages' speeds on (layout_guard.hpp)
  return std::make_unique<LayoutGuard>(settings(cfg).window, std::move(balance),
                                       plan::modelled_partition(m, grid.shape().pp));
}

}  // namespace

void check_adapt_full(const Config& cfg, const GridShape& g) {
  const ConfigChoices c = cfg.choices();
  std::string why;
  if (g.size() < 2) why = "one rank has no other layout to switch to";
  else if (c.sparsity != SparsityPattern::None) why = "the in-memory handover does not carry 2:4 masks yet";
  else if (c.compress == CompressMethod::TopK) why = "the in-memory handover does not carry top-k's error-feedback residuals yet";
  if (!why.empty()) throw Error("config: parallel.adapt = \"full\" cannot run here: " + why);
}

std::unique_ptr<LayoutAdapter> LayoutAdapter::make(const Config& cfg, Grid& grid, const std::vector<int>& partition) {
  const test_hooks::Relayout h = test_hooks::relayout();
  const bool full = cfg.choices().adapt == AdaptMode::Full;
  if (h.step < 1 && !full) return nullptr;
  const LayoutChoice now = layout_of(cfg, grid.shape());
  std::unique_ptr<LayoutAdapter> a(new LayoutAdapter(cfg, grid));
  if (h.step >= 1) {
    const LayoutChoice to{GridShape{h.tp, h.pp, h.dp}, now.zero, now.micro_batch};  // the hook changes the grid
    if (to.grid.size() != now.grid.size())
      throw Error(std::string(test_hooks::kRelayout) + ": " + layout_text(to.grid) + " is not the run's " +
                  std::to_string(now.grid.size()) + " ranks");
    relaid_config(cfg, to);  // throws here, at the start, when the run could not continue on it
    a->hook_step_ = h.step;
    a->hook_to_ = to;
  }
  if (full) {
    check_adapt_full(cfg, now.grid);
    test_hooks::layout_predict_factors();  // a malformed hook: refused at the start
    a->base_ = layout_base_cluster(cfg);
    a->decider_ = std::make_unique<LayoutDecider>(settings(cfg), now);
    a->guard_ = make_guard(cfg, grid, partition);
  }
  return a;
}

// The decider's evaluation from this window's calibration; a calibration the figures cannot fit keeps the layout
// (the same on every rank: the same figures).
LayoutDecision LayoutAdapter::evaluate(int step, const std::string& hold) {
  std::vector<LayoutPrediction> predicted;
  std::string why;
  try {
    predicted = predict_layouts(cfg_, decider_->now(), decider_->window_median(), base_, nullptr);
  } catch (const Error& e) {
    why = std::string("the planner could not be calibrated: ") + e.what();
    predicted = {{decider_->now(), decider_->window_median().step_ms}};
  }
  LayoutDecision d = decider_->decide(step, predicted, hold);
  if (!why.empty()) d.note = why;
  return d;
}

std::optional<LayoutChoice> LayoutAdapter::after_step(int step, const std::vector<double>& compute_ms,
                                                      const std::string& uneven, StepStats* s) {
  if (guard_) guard_->observe(compute_ms);
  const bool due = decider_ && decider_->observe(step, layout_sample(*s));
  if (due && s->adapt_json.empty()) {  // (a rebalancer's evaluation in this step: due again at the next)
    // The guard's reason from the all-gathered figures and verdict: the same on every rank.
    const std::vector<int> none;
    LayoutDecision d = evaluate(step, guard_->hold(s->straggler_monitored ? s->straggler.stragglers : none, uneven));
    // The agreement: world rank 0's action and target are every rank's (computed alike from the same figures).
    std::vector<int> agreed{int(d.action), d.to.grid.tp, d.to.grid.pp, d.to.grid.dp, d.to.zero, d.to.micro_batch};
    agree_with_rank0(grid_.world(), d.action != LayoutAction::Keep, &agreed);
    d.action = LayoutAction(agreed[0]);
    d.to = LayoutChoice{GridShape{agreed[1], agreed[2], agreed[3]}, agreed[4], agreed[5]};
    s->adapt_json = decision_json(d, d.note);
    decisions_.push_back(s->adapt_json);
    log(d, d.note);
    if (d.action != LayoutAction::Keep) return d.to;
  }
  if (hook_step_ > 0 && step == hook_step_) return hook_to_;
  return std::nullopt;
}

void LayoutAdapter::log(const LayoutDecision& d, const std::string& why) const {
  if (grid_.world_rank() != 0) return;
  std::printf("gridtrain: step %d: adapt: layout %s measured %.2f ms per step (noise spread %.2f); calibrated "
              "planner: this layout %.2f ms, best other %s %.2f ms (%d layouts predicted); gain %.2f, threshold %.2f",
              d.step, layout_text(d.current).c_str(), d.measured_ms, d.noise, d.predicted_now_ms,
              layout_text(d.best).c_str(), d.predicted_best_ms, d.candidates, d.gain, d.needed);
  if (d.judged_step > 0)
    std::printf("; the switch at step %d measured gain %.2f (predicted %.2f)", d.judged_step, d.measured_gain,
                d.promised_gain);
  if (!why.empty()) std::printf("; %s", why.c_str());
  if (!d.reason.empty()) std::printf("; %s", d.reason.c_str());
  const char* what = d.action == LayoutAction::Switch       ? "switching to "
                     : d.action == LayoutAction::SwitchBack ? "short of it: switching back to "
                     : d.reason.empty()                     ? "keeping the layout"
                                                            : "keeping the layout (the rebalancers' case)";
  std::printf(": %s%s\n", what, d.action == LayoutAction::Keep ? "" : layout_text(d.to).c_str());
  std::fflush(stdout);
}

LayoutCarry LayoutAdapter::carry() const {
  LayoutCarry c;
  if (decider_) c.memory = decider_->memory();
  c.decisions = decisions_;
  c.earlier_rebalancing = earlier_rebalancing_;
  return c;
}

void LayoutAdapter::adopt(LayoutCarry c) {
  decisions_ = std::move(c.decisions);
  earlier_rebalancing_ = std::move(c.earlier_rebalancing);
  if (decider_) decider_ = std::make_unique<LayoutDecider>(settings(cfg_), layout_of(cfg_, grid_.shape()), std::move(c.memory));
}

void LayoutAdapter::switch_refused(LayoutCarry* c, int step, const LayoutChoice& to, const std::string& why) {
  c->memory.failed.push_back(to);
  c->memory.pending = false;
  c->memory.has_left = false;
  JsonObject j;
  j.integer("step", step).str("action", "switch_refused").str("to_layout", layout_text(to)).str("note", why);
  c->decisions.push_back(j.dump());
}

std::string LayoutAdapter::decisions_json() const { return decides() ? json_list(decisions_) : std::string(); }

int global_samples(const Config& cfg) {
  return cfg.train.micro_batch_size * cfg.train.micro_batches * cfg.parallel.dp;
}

LayoutChoice layout_of(const Config& cfg, const GridShape& g) {
  return LayoutChoice{g, cfg.parallel.zero, cfg.train.micro_batch_size};
}

Config relaid_config(const Config& now, const LayoutChoice& to) {
  Config c = now;
  const int samples = global_samples(now);
  if (to.micro_batch < 1 || samples % (to.micro_batch * to.grid.dp) != 0)
    throw Error("adapt: a re-layout to dp = " + std::to_string(to.grid.dp) + " with micro-batches of " +
                std::to_string(to.micro_batch) + " cannot keep the global batch of " + std::to_string(samples) +
                " sequences");
  c.parallel.tp = to.grid.tp;
  c.parallel.pp = to.grid.pp;
  c.parallel.dp = to.grid.dp;
  c.parallel.zero = to.zero;
  c.train.micro_batch_size = to.micro_batch;
  c.train.micro_batches = samples / (to.micro_batch * to.grid.dp);
  c.parallel.stage_blocks.clear();
  c.parallel.dp_shares.clear();
  c.validate();
  return c;
}

}  // namespace gt
