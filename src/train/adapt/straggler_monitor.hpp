#pragma once
// parallel.adapt = monitor (issue 25, docs/adaptive.md): each step, every rank's compute time is gathered over
// the world and fed to the StragglerDetector, so every rank holds the same verdict (no rank can disagree about
// who straggles: the input is one gathered array and the detector is pure). Also owns the test hook that makes
// one rank a straggler (test_hooks::slow_rank(), src/core/test_hooks.hpp).
#include <vector>

#include "src/comm/comm.hpp"
#include "src/grid/grid.hpp"
#include "src/train/report/step_stats.hpp"
#include "src/train/adapt/straggler.hpp"

namespace gt {

// The pipeline stage of every world rank (collective over the world): the detector's and the adapter's view
// of which ranks belong to one stage.
std::vector<int> stage_of_every_rank(Grid& grid);

class StragglerMonitor {
 public:
  // Collective over the grid's world (gathers each rank's pipeline stage: ranks are compared within a stage).
  // cfg: the detector's thresholds (straggler_config(parallel.straggler_ratio)).
  StragglerMonitor(Grid& grid, StragglerConfig cfg);

  // At the start of a step, inside its timing: the hook's rank sleeps (k - 1) x its last step's own compute, as
  // a device k times slower would take. Nothing without the hook.
  void before_step();

  // Collective over the world, after the step's figures are known: gathers compute_ms, observes, and writes the
  // verdict into s (s->straggler, s->straggler_monitored).
  void after_step(const StepTimes& t, StepStats* s);
  // Every rank's compute milliseconds of the last step (the array after_step gathered).
  const std::vector<double>& last_compute_ms() const { return last_; }

 private:
  Grid& grid_;
  StragglerDetector detector_;
  int slow_rank_ = -1;
  double slow_factor_ = 1;
  double slept_ms_ = 0;         // the hook's sleep in the current step
  std::vector<double> last_;
  double own_compute_ms_ = 0;   // this rank's last compute, the sleep left out (so the sleep does not compound)
};

}  // namespace gt
