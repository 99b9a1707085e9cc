#pragma once
// Forward + backward seconds of every unit this rank computes (0 embedding, l + 1 block l, L + 1 head and
// loss), for pipeline rebalancing (parallel.rebalance = auto): the model calls mark() around each unit's
// kernels (GPT::set_unit_timer), end_step() closes a step, and best() gives each unit's fastest step, the one
// least disturbed by whatever else ran on the machine.
#include <vector>

namespace gt {

class BlockTimer {
 public:
  explicit BlockTimer(int n_layer);
  // Fences first (device kernels run asynchronously), so a unit's time is its own kernels'.
  void mark(int unit, bool start);
  void end_step();
  // Seconds per unit (size n_layer + 2): the minimum over the closed steps; 0 for units not on this rank.
  const std::vector<double>& best() const { return best_; }
  int steps() const { return steps_; }

 private:
  std::vector<double> step_, best_;
  double started_ = 0;
  int steps_ = 0;
  std::vector<double> slow_s_;  // per unit: test_hooks::slow_blocks() (see the constructor)
};

}  // namespace gt
