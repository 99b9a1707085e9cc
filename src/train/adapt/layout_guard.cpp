#include "src/train/adapt/layout_guard.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_noise.hpp"

namespace gt {

LayoutGuard::LayoutGuard(int window, std::unique_ptr<AdaptDecider> balance, std::vector<int> reference)
    : window_(window), balance_(std::move(balance)), reference_(std::move(reference)) {
  if (window_ < 1) throw Error("adapt: the layout guard needs a window >= 1");
  if (balance_ && reference_.empty()) throw Error("adapt: the layout guard's stage figure needs a reference partition");
}

void LayoutGuard::observe(const std::vector<double>& compute_ms) {
  if (!warm_) {  // warm-up, as the decider's first step
    warm_ = true;
    return;
  }
  recent_.push_back(compute_ms);
  if (int(recent_.size()) > window_) recent_.erase(recent_.begin());
}

// The rebalancing decider's verdict on each rank's median over the window (its evaluation's input, too), on the
// equal-devices partition.
std::string LayoutGuard::stage_imbalance() const {
  if (!balance_ || recent_.empty()) return "";
  const AdaptDecision d = balance_->balance_on(adapt_noise::rank_medians(recent_), reference_);
  if (!balance_->imbalanced(d) || d.stage_ms.empty()) return "";
  const auto slow = std::max_element(d.stage_ms.begin(), d.stage_ms.end());
  const double mean = std::accumulate(d.stage_ms.begin(), d.stage_ms.end(), 0.0) / double(d.stage_ms.size());
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "imbalance: stage %d is %.2fx the mean stage time (rebalancing blocks %s -> %s predicts a gain of "
                "%.2f, at or above the rebalancer's bar %.2f)",
                int(slow - d.stage_ms.begin()), mean > 0 ? *slow / mean : 1.0, stage_blocks_text(d.current).c_str(),
                stage_blocks_text(d.proposed).c_str(), d.gain, balance_->imbalance_bar());
  std::string why = buf;
  if (balance_->partition() != reference_)
    why += "; the stages hold " + stage_blocks_text(balance_->partition()) + ", rebalanced around the slower device";
  return why;
}

std::string LayoutGuard::hold(const std::vector<int>& stragglers, const std::string& also) const {
  std::string why;
  if (!stragglers.empty()) {
    why = stragglers.size() == 1 ? "straggler: rank " : "stragglers: ranks ";
    for (size_t i = 0; i < stragglers.size(); ++i) why += (i ? ", " : "") + std::to_string(stragglers[i]);
  }
  const std::string stages = stage_imbalance();
  if (!stages.empty()) why += (why.empty() ? "" : "; ") + stages;
  if (!also.empty()) why += (why.empty() ? "" : "; ") + also;
  return why;
}

}  // namespace gt
