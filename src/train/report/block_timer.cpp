#include "src/train/report/block_timer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>

#include "kernels/kokkos_compat.hpp"
#include "src/core/error.hpp"
#include "src/core/test_hooks.hpp"

namespace gt {

BlockTimer::BlockTimer(int n_layer) : step_(size_t(n_layer) + 2, 0.0), best_(size_t(n_layer) + 2, 0.0) {
  // Test hook test_hooks::slow_blocks() (src/core/test_hooks.hpp; tests/plan/test_rebalance_run.sh): block l takes
  // ms milliseconds longer in each forward and each backward, as a block on a slower device would; the real
  // clock measures it, so the whole path from timing to the new partition is exercised.
  slow_s_.assign(step_.size(), 0.0);
  for (const auto& [l, seconds] : test_hooks::slow_blocks()) {  // src/core/test_hooks.hpp
    if (l < 0 || l >= n_layer)
      throw Error(std::string(test_hooks::kSlowBlock) + " names block " + std::to_string(l) + ", the model has " +
                  std::to_string(n_layer));
    slow_s_[size_t(l) + 1] = seconds;
  }
}

void BlockTimer::mark(int unit, bool start) {
  Kokkos::fence();
  if (!start && slow_s_[size_t(unit)] > 0) usleep(useconds_t(slow_s_[size_t(unit)] * 1e6));
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (start) {
    started_ = now;
  } else {
    step_[size_t(unit)] += now - started_;
  }
}

void BlockTimer::end_step() {
  for (size_t u = 0; u < step_.size(); ++u) {
    if (step_[u] > 0) best_[u] = steps_ == 0 || best_[u] == 0 ? step_[u] : std::min(best_[u], step_[u]);
    step_[u] = 0;
  }
  ++steps_;
}

}  // namespace gt
