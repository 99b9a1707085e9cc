#include "src/train/adapt/straggler_monitor.hpp"

#include <unistd.h>

#include <vector>

#include "src/comm/watchdog.hpp"
#include "src/core/test_hooks.hpp"

namespace gt {

std::vector<int> stage_of_every_rank(Grid& grid) {
  const int mine = grid.pp_rank();
  std::vector<int> all(size_t(grid.world_size()));
  grid.world().allgather(&mine, all.data(), 1, DType::I32);
  return all;
}

StragglerMonitor::StragglerMonitor(Grid& grid, StragglerConfig cfg)
    : grid_(grid), detector_(cfg, stage_of_every_rank(grid)) {
  const test_hooks::SlowRank hook = test_hooks::slow_rank();  // src/core/test_hooks.hpp
  slow_rank_ = hook.rank;
  slow_factor_ = hook.factor;
}

void StragglerMonitor::before_step() {
  slept_ms_ = 0;
  if (grid_.world_rank() != slow_rank_ || own_compute_ms_ <= 0) return;
  slept_ms_ = (slow_factor_ - 1) * own_compute_ms_;
  usleep(useconds_t(slept_ms_ * 1e3));
}

void StragglerMonitor::after_step(const StepTimes& t, StepStats* s) {
  own_compute_ms_ = t.compute_ms() - slept_ms_;
  const double mine = t.compute_ms();
  std::vector<double> all(size_t(grid_.world_size()));
  grid_.world().allgather(&mine, all.data(), 1, DType::F64);
  s->straggler = detector_.observe(all);
  watchdog::set_context(detector_.describe());  // named in the watchdog's report should the next step hang
  last_ = std::move(all);
  s->straggler_monitored = true;
}

}  // namespace gt
