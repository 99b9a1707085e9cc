#pragma once
// Live re-layout (issue 25, docs/adaptive.md, "Live re-layout"): at a step boundary the run continues on another
// (tp, pp, dp) of the same ranks, the state handed over in memory in global shapes (state_handoff.hpp, as a live
// pipeline move does), with the same global batch (micro-batches per replica scaled by the DP size).
// The trigger: parallel.adapt = "full", whose decision is the LayoutDecider's (layout_decider.hpp, pure) on the
// planner calibrated from this run's figures (layout_predict.hpp), held while a rank or a stage is slower than its
// peers (LayoutGuard, layout_guard.hpp), agreed by a broadcast from world rank 0; or
// the test hook test_hooks::relayout() (src/core/test_hooks.hpp), a forced switch after a given step.
// The switch itself: Trainer::run returns with relayout(), main.cpp builds the new grid and a trainer on it,
// which adopts the state and this adapter's carry (the decider's memory and the decisions so far).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/plan/cluster.hpp"
#include "src/train/adapt/layout_decider.hpp"
#include "src/train/adapt/layout_guard.hpp"
#include "src/train/report/step_stats.hpp"

namespace gt {

// What an adapter hands the adapter of the trainer built on the new layout.
struct LayoutCarry {
  LayoutMemory memory;
  std::vector<std::string> decisions;  // the JSON objects of every evaluation so far
  // parallel.adapt = full: the live rebalancers' evaluations on the layouts before this one (their adapters are
  // rebuilt for each layout), so summary.json lists the run's every decision
  std::vector<std::string> earlier_rebalancing;
};

// Throws gt::Error (one line, the same on every rank) where parallel.adapt = "full" cannot run: one rank (no
// other layout), 2:4 sparsity (the handover does not carry the masks), top-k compression (nor the error-feedback
// residuals).
void check_adapt_full(const Config& cfg, const GridShape& g);

class LayoutAdapter {
 public:
  // Null when nothing can ask for a re-layout in this run (adapt != full, no hook). Throws gt::Error (one line,
  // alike on every rank) on a malformed hook, a layout this run cannot continue on (relaid_config), or what
  // check_adapt_full refuses, before any step: a switch that cannot be made is refused at the start.
  // partition: the first block of each pipeline stage (+ n_layer), the guard's stage figure. Collective over the
  // world under adapt = full with pp > 1 (gathers every rank's stage).
  static std::unique_ptr<LayoutAdapter> make(const Config& cfg, Grid& grid, const std::vector<int>& partition);
  // After step `step`, its world-reduced figures in *s (the same on every rank, the straggler verdict among them)
  // and every rank's compute ms (the straggler monitor's all-gathered array; empty without the monitor); under
  // adapt = full collective over the world, and an evaluation's JSON goes into s->adapt_json. uneven: why the
  // ranks are known unequal from outside the guard ("" when not: the data-parallel shares' adapter's
  // uneven_reason), a reason to hold. A live rebalancer's evaluation in this step (s->adapt_json already set)
  // defers a due evaluation to the next step: one decision per step, each in its own metrics line. The layout to
  // continue on from the next step, or none.
  std::optional<LayoutChoice> after_step(int step, const std::vector<double>& compute_ms, const std::string& uneven,
                                         StepStats* s);
  LayoutCarry carry() const;
  void adopt(LayoutCarry c);          // after a switch (before the first step on the new layout)
  // The carry with the measured time of the switch it is handed over in (the next decisions weigh it).
  static void set_switch_cost(LayoutCarry* c, double ms) { c->memory.switch_cost_ms = ms; }
  // The switch after step `step` to `to` could not be made (why: its memory check's one line, the same on every
  // rank) and the run continues on the layout it had: `to` is never proposed again, no switch is pending
  // judgement, and the list of decisions records it ("switch_refused").
  static void switch_refused(LayoutCarry* c, int step, const LayoutChoice& to, const std::string& why);
  bool decides() const { return decider_ != nullptr; }  // parallel.adapt = full (not the test hook alone)
  std::string decisions_json() const;  // "[{...}, ...]"; "" without a decider (the test hook alone)
  const std::vector<std::string>& decisions() const { return decisions_; }  // the same, one object each
  const std::vector<std::string>& earlier_rebalancing() const { return earlier_rebalancing_; }  // (LayoutCarry)

 private:
  LayoutAdapter(const Config& cfg, Grid& grid) : cfg_(cfg), grid_(grid) {}
  LayoutDecision evaluate(int step, const std::string& hold);
  void log(const LayoutDecision& d, const std::string& why) const;
  Config cfg_;
  Grid& grid_;
  int hook_step_ = 0;  // the test hook's forced switch (0: none)
  LayoutChoice hook_to_;
  std::unique_ptr<LayoutDecider> decider_;  // parallel.adapt = full
  std::unique_ptr<LayoutGuard> guard_;      // parallel.adapt = full
  plan::Cluster base_;
  std::vector<std::string> decisions_;
  std::vector<std::string> earlier_rebalancing_;
};

// The global batch in sequences: micro-batch size x micro-batches per replica x replicas.
int global_samples(const Config& cfg);

// The layout a configuration runs on grid `g`.
LayoutChoice layout_of(const Config& cfg, const GridShape& g);

// The configuration of the run continued on `to`: the grid's sizes, the ZeRO stage, the micro-batch size and
// micro-batches per replica so that the global batch (micro_batch_size x micro_batches x dp) is the same, the
// default pipeline partition and even data-parallel shares (both were for the old grid). Validated as a fresh start
// is; throws gt::Error (one line, the same on every rank) when the layout cannot run this model or keep its global
// batch.
Config relaid_config(const Config& now, const LayoutChoice& to);

}  // namespace gt
