#include "src/train/adapt/straggler.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace gt {

StragglerDetector::StragglerDetector(StragglerConfig cfg, std::vector<int> stage_of_rank)
    : cfg_(cfg), stage_of_rank_(std::move(stage_of_rank)) {
  if (cfg_.window < 1 || cfg_.k < 1 || cfg_.k > cfg_.window || cfg_.exit_ratio > cfg_.enter_ratio) {
    throw std::invalid_argument("straggler detector: need 1 <= k <= window and exit_ratio <= enter_ratio");
  }
  const std::size_t n = stage_of_rank_.size();
  above_.assign(n, {});
  below_run_.assign(n, 0);
  flagged_.assign(n, false);
  flagged_run_.assign(n, 0);
  last_ratio_.assign(n, 1.0);
  flagged_steps_.assign(n, 0);
}

double StragglerDetector::ratio_to_peers(const std::vector<double>& compute_s, int r) const {
  std::vector<double> peers;
  for (std::size_t q = 0; q < compute_s.size(); ++q) {
    if (static_cast<int>(q) != r && stage_of_rank_[q] == stage_of_rank_[r]) peers.push_back(compute_s[q]);
  }
  if (peers.empty()) return 1.0;
  // Median of the peers, not of the group with the rank itself: with 2 ranks the slow one would otherwise
  // pull its own reference up and hide half its slowdown.
  std::sort(peers.begin(), peers.end());
  const std::size_t m = peers.size();
  const double median = m % 2 ? peers[m / 2] : 0.5 * (peers[m / 2 - 1] + peers[m / 2]);
  if (median <= 0.0) return 1.0;
  return compute_s[r] / median;
}

StragglerStep StragglerDetector::observe(const std::vector<double>& compute_s) {
  if (compute_s.size() != stage_of_rank_.size()) {
    throw std::invalid_argument("straggler detector: got times for " + std::to_string(compute_s.size()) +
                                " ranks, expected " + std::to_string(stage_of_rank_.size()));
  }
  StragglerStep out;
  const int n = static_cast<int>(compute_s.size());
  for (int r = 0; r < n; ++r) {
    const double ratio = ratio_to_peers(compute_s, r);
    last_ratio_[r] = ratio;
    // Ties go to the lowest rank: the report is the same on every rank and from run to run.
    if (out.slowest_rank < 0 || ratio > out.slowest_ratio) {
      out.slowest_rank = r;
      out.slowest_ratio = ratio;
    }
    auto& hist = above_[r];
    hist.push_back(ratio > cfg_.enter_ratio);
    if (static_cast<int>(hist.size()) > cfg_.window) hist.pop_front();
    below_run_[r] = ratio < cfg_.exit_ratio ? below_run_[r] + 1 : 0;
    const int above = static_cast<int>(std::count(hist.begin(), hist.end(), true));
    if (!flagged_[r] && above >= cfg_.k) {
      flagged_[r] = true;
      out.became.push_back(r);
    } else if (flagged_[r] && below_run_[r] >= cfg_.window) {
      flagged_[r] = false;
      hist.clear();  // a fresh window: the old slow steps must not re-flag it at once
      out.stopped.push_back(r);
    }
    flagged_run_[r] = flagged_[r] ? flagged_run_[r] + 1 : 0;
    if (flagged_[r]) {
      out.stragglers.push_back(r);
      ++flagged_steps_[r];
    }
  }
  last_ = out;
  observed_ = true;
  return out;
}

std::string StragglerDetector::describe() const {
  if (!observed_) return "";
  char buf[160];
  auto rank_at = [&](int r) {
    std::snprintf(buf, sizeof buf, "rank %d at %.2fx its peers' median compute", r, last_ratio_[size_t(r)]);
    return std::string(buf);
  };
  if (last_.stragglers.empty()) {
    if (last_.slowest_rank < 0) return "no straggler";
    return "no straggler (slowest at the last step: " + rank_at(last_.slowest_rank) + ")";
  }
  std::string out = "stragglers: ";
  for (size_t i = 0; i < last_.stragglers.size(); ++i) {
    const int r = last_.stragglers[i];
    out += (i ? "; " : "") + rank_at(r) + " at the last step (flagged for the last " +
           std::to_string(flagged_run_[size_t(r)]) + " steps)";
  }
  return out;
}

}  // namespace gt
