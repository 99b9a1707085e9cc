#pragma once
// Live re-layout (issue 25, docs/adaptive.md, "Live re-layout"): at a step boundary the run continues on another
// (tp, pp, dp) of the same ranks, the state handed over in memory in global shapes (state_handoff.hpp, as a live
// pipeline move does), with the same global batch (micro-batches per replica scaled by the DP size).
// What is built: the switch itself (Trainer::run returns with relayout(), main.cpp builds the new grid and a
// trainer on it, which adopts the state). What is not: the decision (the planner fed with this run's measured
// figures, the predicted and measured gain, switching back), so parallel.adapt = "full" is still refused and the
// only trigger is the test hook test_hooks::relayout() (src/core/test_hooks.hpp).
#include <memory>
#include <optional>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"

namespace gt {

class LayoutAdapter {
 public:
  // Null when nothing can ask for a re-layout in this run (no hook). Throws gt::Error (one line, alike on every
  // rank) on a malformed hook or a layout this run cannot continue on (relaid_config), before any step: a switch
  // that cannot be made is refused at the start, not after the state was handed over.
  static std::unique_ptr<LayoutAdapter> make(const Config& cfg, const GridShape& now);
  // After step `step` (the same on every rank: the hook's environment is the same): the layout to continue on
  // from the next step, or none.
  std::optional<GridShape> after_step(int step) const;

 private:
  LayoutAdapter(int step, GridShape to) : step_(step), to_(to) {}
  int step_;
  GridShape to_;
};

// The configuration of the run continued on `to`: the grid's sizes, micro-batches per replica so that the global
// batch (micro_batch_size x micro_batches x dp) is the same, the default pipeline partition and even data-parallel
// shares (both were for the old grid). Validated as a fresh start is; throws gt::Error (one line, the same on every
// rank) when the layout cannot run this model or keep its global batch.
Config relaid_config(const Config& now, const GridShape& to);

}  // namespace gt
