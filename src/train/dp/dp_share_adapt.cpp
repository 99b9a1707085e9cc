#include "src/train/dp/dp_share_adapt.hpp"

#include <algorithm>
#include <stdexcept>

namespace gt::dp {

namespace {

double step_ms(const std::vector<int>& shares, const std::vector<double>& per_micro_ms) {
  double m = 0;
  for (size_t r = 0; r < shares.size(); ++r) m = std::max(m, shares[r] * per_micro_ms[r]);
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

ShareProposal propose_dp_shares(const std::vector<int>& current, const std::vector<double>& per_micro_ms) {
  if (current.empty() || current.size() != per_micro_ms.size())
    throw std::invalid_argument("propose_dp_shares: one share and one time per replica");
  int total = 0;
  for (int s : current) total += s;
  const int n = int(current.size());
  if (total < n) throw std::invalid_argument("propose_dp_shares: fewer micro-batches than replicas");
  ShareProposal p;
  p.shares.assign(size_t(n), 1);
  for (int left = total - n; left > 0; --left) {
    int best = 0;
    for (int r = 1; r < n; ++r)
      if ((p.shares[size_t(r)] + 1) * per_micro_ms[size_t(r)] < (p.shares[size_t(best)] + 1) * per_micro_ms[size_t(best)])
        best = r;  // strictly less: ties stay with the lowest replica
    ++p.shares[size_t(best)];
  }
  p.now_ms = step_ms(current, per_micro_ms);
  p.predicted_ms = step_ms(p.shares, per_micro_ms);
  p.gain = p.predicted_ms > 0 ? p.now_ms / p.predicted_ms : 1.0;
  return p;
}

DpShareDecider::DpShareDecider(DpShareSettings s, std::vector<int> replica_of_rank, std::vector<int> shares)
    : set_(s), replica_of_rank_(std::move(replica_of_rank)), shares_(std::move(shares)) {}

DpShareDecision DpShareDecider::observe(int step, const std::vector<double>& compute_ms) {
  DpShareDecision d;
  d.step = step;
  if (!warm_) {  // the first step after the start or a change: not counted
    warm_ = true;
    return d;
  }
  std::vector<double> replica_ms(shares_.size(), 0.0);
  for (size_t w = 0; w < compute_ms.size() && w < replica_of_rank_.size(); ++w) {
    double& t = replica_ms[size_t(replica_of_rank_[w])];
    t = std::max(t, compute_ms[w]);
  }
  for (size_t r = 0; r < shares_.size(); ++r) replica_ms[r] /= shares_[r];
  window_.push_back(replica_ms);
  if (int(window_.size()) > set_.window) window_.erase(window_.begin());
  if (int(window_.size()) < set_.window || step - last_eval_ < set_.interval) return d;

  last_eval_ = step;
  d.evaluated = true;
  d.current = shares_;
  d.per_micro_ms.resize(shares_.size());
  for (size_t r = 0; r < shares_.size(); ++r) {
    std::vector<double> col;
    for (const auto& row : window_) col.push_back(row[r]);
    d.per_micro_ms[r] = median(col);
  }
  const ShareProposal p = propose_dp_shares(shares_, d.per_micro_ms);
  d.proposed = p.shares;
  d.now_ms = p.now_ms;
  d.predicted_ms = p.predicted_ms;
  d.gain = p.gain;
  if (before_move_ms_ > 0 && d.now_ms > 0) {
    d.measured_gain = before_move_ms_ / d.now_ms;
    d.measured_move_step = move_step_;
    before_move_ms_ = 0;  // reported once, in the first window after the change
  }
  d.needed = 1.0 + (p.shares == left_ ? 2.0 : 1.0) * set_.threshold;
  d.move = p.shares != shares_ && d.gain >= d.needed;
  if (d.move) {
    left_ = shares_;
    shares_ = p.shares;
    before_move_ms_ = d.now_ms;
    move_step_ = step;
    window_.clear();
    warm_ = false;
  }
  return d;
}

}  // namespace gt::dp
