#pragma once
// parallel.adapt = full (issue 25, docs/adaptive.md, "Live re-layout"): when to continue the run on another
// layout (tp, pp, dp, ZeRO stage, micro-batch size) of the same ranks, and when to come back. A pure class (no MPI, no clock, no planner): fed every
// step's measured figures (the world-reduced StepStats, the same on every rank), it says when an evaluation is
// due and gives the window's medians; the caller predicts every layout's step from them (layout_predict.hpp: the
// planner calibrated from this run) and the decider chooses from those predictions.
//
// Rules, so that noise and a misjudging model do not move the run back and forth:
//   - the first step after the start and after every switch is warm-up, not counted;
//   - an evaluation needs `window` counted steps on this layout and `interval` steps since the last evaluation;
//   - like with like: the gain is the predicted step of the current layout over the predicted step of the best
//     other one, both from the same calibration (a measured step against a modelled one would credit the model
//     with its own error);
//   - a switch needs a gain >= 1 + t, t = max(threshold, noise_factor x the window's spread of the measured step
//     time) (adapt_noise.hpp, the rule of the data-parallel shares' decider); going back to the layout left at the
//     last switch that delivered needs 1 + 2t;
//   - the first evaluation after a switch judges it: its measured gain (the measured step before it over the
//     measured step of the first window after it) must reach 1 + t/2 and be no further below the predicted gain
//     than 1 + t allows; if not, the run switches back to the layout it left, and the layout it tried is never
//     tried again in this run (no flip-flop between a layout the model likes and the one the machine likes), nor
//     any layout on its grid when that is not the grid it returns to;
//   - a switch must pay for itself, as a pipeline move must (adapt_decider.hpp): the predicted saving per step
//     (the measured step less the measured step over the predicted gain) times the steps left must exceed twice
//     the switch's cost (the last switch's measured time, before any cost_in_steps measured steps); the judgement's
//     switch back is not weighed (returning is the conservative move);
//   - the guard (layout_guard.hpp): while a rank or a stage is measurably slower than its peers, no switch (the
//     model's identical devices are the wrong evidence then; the rebalancers' case). The judgement of an earlier
//     switch still runs first and may switch back: it compares two measurements on this machine, no model.
#include <string>
#include <vector>

#include "src/grid/grid.hpp"

namespace gt {

// What one step measured, in ms (StepStats): the step (slowest rank), the critical rank's own compute (forward
// and backward), the optimizer, and the exposed communication the calibration fits the link to.
struct LayoutSample {
  double step_ms = 0, compute_ms = 0, optimizer_ms = 0, tp_ms = 0, dp_ms = 0;
};

// A layout the run can continue on: the grid, the ZeRO stage and the micro-batch size (the micro-batch count
// follows from the global batch: relaid_config, layout_adapter.hpp).
struct LayoutChoice {
  GridShape grid;
  int zero = 0;
  int micro_batch = 1;
};
bool same_grid(const GridShape& a, const GridShape& b);
bool same_layout(const LayoutChoice& a, const LayoutChoice& b);

struct LayoutPrediction {
  LayoutChoice shape;
  double predicted_ms = 0;  // the calibrated planner's step
};

struct LayoutSettings {
  int interval = 10;        // parallel.adapt_interval
  double threshold = 0.1;   // parallel.rebalance_gain
  int window = 5;           // counted steps whose medians an evaluation uses
  double noise_factor = 2;  // adapt_noise.hpp
  int total_steps = 0;      // train.steps (0: unknown, a switch's cost is not weighed)
  // A switch's cost before one was measured, in measured steps: it gathers the whole model, rebuilds the grid and
  // the trainer and scatters (0.5-1.1 s at 100-250 ms steps on this machine: 4-8 steps, 2026-12-06)
  double cost_in_steps = 6;
};

enum class LayoutAction { Keep, Switch, SwitchBack };
const char* layout_action_name(LayoutAction a);  // "keep", "switch", "switch_back"
std::string layout_text(const GridShape& g);     // "tp 1 x pp 2 x dp 1"
std::string layout_text(const LayoutChoice& c);  // "tp 1 x pp 2 x dp 1, zero 0, micro-batch 4"

struct LayoutDecision {
  bool evaluated = false;
  LayoutAction action = LayoutAction::Keep;
  int step = 0;
  LayoutChoice current, best, to;  // best: the best other layout predicted; to: where the run continues
  double measured_ms = 0;       // the window's median step
  double predicted_now_ms = 0, predicted_best_ms = 0, gain = 1, needed = 1, noise = 0;
  int candidates = 0;           // layouts predicted (the current one included)
  // The judged switch (first evaluation after it): its step, measured and predicted gain; 0 when none.
  int judged_step = 0;
  double measured_gain = 0, promised_gain = 0;
  double saved_ms = 0, cost_ms = 0;  // a switch's predicted saving over the steps left and its expected cost
  std::string note;             // why nothing was proposed (no other layout, every one tried, no pay), or ""
  std::string reason;           // the guard's: what is imbalanced, why no switch was made; "" when nothing held it
};

// What the decider keeps from one layout to the next (the trainer is rebuilt on each switch).
struct LayoutMemory {
  int last_eval = -1000000;
  bool has_left = false;
  LayoutChoice left;                 // the layout left at the last switch
  std::vector<LayoutChoice> failed;  // switched to, measured short, switched back (or refused): never again
  // The grids of the layouts measured short that were not the grid switched back to: no layout on them again (the
  // model misjudged that grid on this machine; trying its other ZeRO stages and micro-batch sizes one by one moved
  // a quiet pp 4 run back and forth four times, 0.77 of not adapting, 2026-12-06)
  std::vector<GridShape> failed_grids;
  bool pending = false;           // a switch not judged yet
  int switch_step = 0;
  double before_ms = 0, promised = 0;
  double switch_cost_ms = -1;  // the last switch's measured time (-1: none yet)
};

class LayoutDecider {
 public:
  LayoutDecider(LayoutSettings s, LayoutChoice now, LayoutMemory memory = {});
  // After step `step`: true when an evaluation is due now (then call window_median and decide).
  bool observe(int step, const LayoutSample& sample);
  LayoutSample window_median() const;
  // The evaluation at `step` from every layout's prediction (the current one among them: throws gt::Error if
  // not). A returned Switch or SwitchBack is taken: the decider is on decision.to from here. hold: the guard's
  // reason (LayoutGuard::hold), "" when balanced; with one, no Switch (a SwitchBack of the judgement still).
  LayoutDecision decide(int step, const std::vector<LayoutPrediction>& predicted, const std::string& hold = "");
  const LayoutMemory& memory() const { return mem_; }
  const LayoutChoice& now() const { return now_; }

 private:
  bool judge(LayoutDecision* d, double t);
  void take(LayoutDecision* d, LayoutAction a, const LayoutChoice& to);
  LayoutSettings set_;
  LayoutChoice now_;
  LayoutMemory mem_;
  bool warm_ = false;
  std::vector<LayoutSample> window_;
};

}  // namespace gt
