#include "src/train/dp/dp_share_adapt.hpp"

#include <algorithm>
#include <stdexcept>

#include "src/train/adapt/adapt_noise.hpp"

namespace gt::dp {

namespace {

double step_ms(const std::vector<int>& shares, const std::vector<double>& per_micro_ms) {
  double m = 0;
  for (size_t r = 0; r < shares.size(); ++r) m = std::max(m, shares[r] * per_micro_ms[r]);
  return m;
}

using adapt_noise::quantile;

// One replica's times over the window, sorted.
std::vector<double> column(const std::vector<std::vector<double>>& window, size_t r) {
  std::vector<double> col;
  for (const auto& row : window) col.push_back(row[r]);
  std::sort(col.begin(), col.end());
  return col;
}

// The relative spread (adapt_noise::relative_spread, the interquartile range over the median) of the window's
// bottleneck: each step's slowest replica compute (share x per-micro-batch time), the time a step waits for. Not
// the largest spread of any replica: with 4 ranks on 2 cores the fast replicas' times spread by 50-90% from step to
// step (they share cores with waiting ranks), which put the bar above a 2x slow replica's gain of 2 and held back
// every move in the dp = 4 benchmark (2026-12-05, docs/adaptive.md) - the pipeline decider's finding, the same way.
double window_spread(const std::vector<std::vector<double>>& window, const std::vector<int>& shares) {
  std::vector<double> bottleneck;
  for (const auto& row : window) {
    double worst = 0;
    for (size_t r = 0; r < shares.size(); ++r) worst = std::max(worst, double(shares[r]) * row[r]);
    bottleneck.push_back(worst);
  }
  return adapt_noise::relative_spread(bottleneck);
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
  for (size_t r = 0; r < shares_.size(); ++r) d.per_micro_ms[r] = quantile(column(window_, r), 0.5);
  const ShareProposal p = propose_dp_shares(shares_, d.per_micro_ms);
  d.proposed = p.shares;
  d.now_ms = p.now_ms;  // both from per_micro_ms: like with like
  d.predicted_ms = p.predicted_ms;
  d.gain = p.gain;
  d.noise = window_spread(window_, shares_);
  const double t = std::max(set_.threshold, set_.noise_factor * d.noise);
  judge_last_move(&d, t);
  d.raised = raised_;
  d.needed = 1.0 + (p.shares == left_ ? 2.0 : 1.0) * raised_ * t;
  d.move = p.shares != shares_ && d.gain >= d.needed;
  // A change measured as a loss is undone: the model's speeds were wrong for the new shares (seen on 4 ranks
  // sharing 2 cores, where one replica's speed depends on what its core-mates run), and the shares before it were
  // measured better.
  if (d.measured_gain > 0 && d.measured_gain * (1.0 + t) < 1.0 && !left_.empty()) {
    d.reverted = d.move = true;
    d.proposed = left_;
  }
  if (d.move) {
    left_ = shares_;
    shares_ = d.proposed;
    before_move_ms_ = d.now_ms;
    promised_ = d.reverted ? 1.0 / d.measured_gain : d.gain;  // going back should restore the step before
    move_step_ = step;
    window_.clear();
    warm_ = false;
  }
  return d;
}

// In the first window after a change: its measured gain (the step before it over the step now) against the gain
// it was predicted to have. Short by more than the noise allows (1 + t): the bar is raised for the next moves;
// delivered within it: the bar is back to 1.
void DpShareDecider::judge_last_move(DpShareDecision* d, double t) {
  if (before_move_ms_ <= 0 || d->now_ms <= 0) return;
  d->measured_gain = before_move_ms_ / d->now_ms;
  d->promised_gain = promised_;
  d->measured_move_step = move_step_;
  before_move_ms_ = 0;  // judged once, in the first window after the change
  if (d->measured_gain * (1.0 + t) < promised_) raised_ = std::min(8.0, 2.0 * raised_);
  else raised_ = 1.0;
}

}  // namespace gt::dp
