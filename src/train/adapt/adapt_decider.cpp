#include "src/train/adapt/adapt_decider.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_noise.hpp"

namespace gt {

std::string stage_blocks_text(const std::vector<int>& begin) {
  std::string out;
  for (size_t s = 0; s + 1 < begin.size(); ++s) out += (s ? "," : "") + std::to_string(begin[s + 1] - begin[s]);
  return out;
}

AdaptDecider::AdaptDecider(AdaptSettings s, std::vector<int> stage_of_rank, plan::UnitCosts costs,
                           std::vector<int> partition, AdaptHistory history)
    : s_(s), stage_of_rank_(std::move(stage_of_rank)), costs_(costs), partition_(std::move(partition)),
      history_(std::move(history)) {
  const int stages = int(partition_.size()) - 1;
  for (int st : stage_of_rank_)
    if (st < 0 || st >= stages) throw Error("adapt: a rank's pipeline stage lies outside the partition");
  if (s_.window < 1 || s_.k < 1 || s_.k > s_.window) throw Error("adapt: k must lie in 1..window");
}

// Each stage's seconds per unit of modelled cost (its slowest rank's), and its measured time (its slowest rank's).
std::vector<double> AdaptDecider::stage_scales(const std::vector<double>& rank_ms, std::vector<double>* stage_ms) const {
  const int stages = int(partition_.size()) - 1;
  const std::vector<double> blocks(size_t(partition_.back()), costs_.block);
  const std::vector<double> modelled = plan::stage_costs(partition_, blocks, costs_.embedding, costs_.head);
  stage_ms->assign(size_t(stages), 0.0);
  for (size_t r = 0; r < rank_ms.size(); ++r) {
    double& m = (*stage_ms)[size_t(stage_of_rank_[r])];
    m = std::max(m, rank_ms[r]);
  }
  std::vector<double> scale(static_cast<size_t>(stages));
  // A stage that measured nothing (0 ms: cannot happen in a step, but a scale must stay positive) counts as fast.
  for (int s = 0; s < stages; ++s) scale[size_t(s)] = std::max((*stage_ms)[size_t(s)], 1e-6) / modelled[size_t(s)];
  return scale;
}

AdaptDecision AdaptDecider::propose(const std::vector<double>& rank_ms) const {
  AdaptDecision d;
  d.current = partition_;
  const std::vector<double> scale = stage_scales(rank_ms, &d.stage_ms);
  const std::vector<double> blocks(size_t(partition_.back()), costs_.block);
  d.proposed = plan::partition_by_speed(blocks, scale, costs_.embedding, costs_.head);
  const std::vector<double> cost = plan::stage_costs(d.proposed, blocks, costs_.embedding, costs_.head);
  d.predicted_ms.resize(cost.size());
  for (size_t s = 0; s < cost.size(); ++s) d.predicted_ms[s] = scale[s] * cost[s];
  const double now = *std::max_element(d.stage_ms.begin(), d.stage_ms.end());
  double then = *std::max_element(d.predicted_ms.begin(), d.predicted_ms.end());
  const auto seen = history_.measured.find(stage_blocks_text(d.proposed));
  if (d.proposed != d.current && seen != history_.measured.end()) {
    then = seen->second.second;  // measured on this run: the measurement, not the model
    d.predicted_from_measurement = true;
  }
  d.gain = then > 0 ? now / then : 1.0;
  return d;
}

AdaptDecision AdaptDecider::balance_on(const std::vector<double>& rank_ms, const std::vector<int>& reference) const {
  if (reference.size() != partition_.size() || reference.back() != partition_.back())
    throw Error("adapt: a reference partition of " + std::to_string(reference.size() - 1) + " stages for " +
                std::to_string(partition_.size() - 1) + " (" + stage_blocks_text(reference) + ")");
  AdaptDecision d;
  std::vector<double> measured;
  const std::vector<double> scale = stage_scales(rank_ms, &measured);
  const std::vector<double> blocks(size_t(partition_.back()), costs_.block);
  auto times_on = [&](const std::vector<int>& p) {  // scale[s] x the modelled cost of stage s on p
    std::vector<double> t = plan::stage_costs(p, blocks, costs_.embedding, costs_.head);
    for (size_t s = 0; s < t.size(); ++s) t[s] *= scale[s];
    return t;
  };
  d.current = reference;
  d.stage_ms = times_on(reference);
  d.proposed = plan::partition_by_speed(blocks, scale, costs_.embedding, costs_.head);
  d.predicted_ms = times_on(d.proposed);
  const double then = *std::max_element(d.predicted_ms.begin(), d.predicted_ms.end());
  d.gain = then > 0 ? *std::max_element(d.stage_ms.begin(), d.stage_ms.end()) / then : 1.0;
  return d;
}

// The relative interquartile range of the step's bottleneck (its slowest stage's time) over the window: the noise of
// the figure the gain divides (the slowest stage now). Not the largest over the stages: with 4 ranks on 2 cores a
// fast stage's few milliseconds spread by 60-130% from step to step (descheduling), which held back every move
// off a 3x slower stage in cli_adapt_rebalance while the slow stage itself, the one that decides, spread by far less.
double AdaptDecider::window_spread() const {
  std::vector<double> bottleneck;
  for (const std::vector<double>& ranks : recent_) {
    std::vector<double> stage_ms;
    stage_scales(ranks, &stage_ms);
    bottleneck.push_back(*std::max_element(stage_ms.begin(), stage_ms.end()));
  }
  return adapt_noise::relative_spread(bottleneck);
}

AdaptDecision AdaptDecider::observe(int step, const std::vector<double>& compute_ms) {
  if (compute_ms.size() != stage_of_rank_.size())
    throw Error("adapt: " + std::to_string(compute_ms.size()) + " compute times for " +
                std::to_string(stage_of_rank_.size()) + " ranks");
  for (double v : compute_ms)
    if (!std::isfinite(v)) throw Error("adapt: a rank's compute time is not finite");
  AdaptDecision none;
  none.current = partition_;
  for (auto it = history_.measured.begin(); it != history_.measured.end();)  // old measurements expire
    it = step - it->second.first > 4 * s_.interval ? history_.measured.erase(it) : std::next(it);
  if (++counted_ == 1) return none;  // warm-up on this partition
  const bool gain_now = imbalanced(propose(compute_ms));
  recent_.push_back(compute_ms);
  imbalanced_.push_back(gain_now);
  if (int(recent_.size()) > s_.window) {
    recent_.erase(recent_.begin());
    imbalanced_.erase(imbalanced_.begin());
  }
  if (int(recent_.size()) < s_.window) return none;
  const std::vector<double> med = adapt_noise::rank_medians(recent_);
  std::vector<double> stage_ms;
  stage_scales(med, &stage_ms);
  const std::string here = stage_blocks_text(partition_);
  history_.measured[here] = {step, *std::max_element(stage_ms.begin(), stage_ms.end())};
  const int votes = int(std::count(imbalanced_.begin(), imbalanced_.end(), true));
  if (votes < s_.k || step - history_.last_evaluation < s_.interval) return none;
  AdaptDecision d = propose(med);
  d.evaluated = true;
  d.noise = window_spread();
  d.needed = adapt_noise::needed_gain(s_.gain_threshold, d.noise, s_.noise_factor);
  d.move = d.gain >= d.needed && d.proposed != d.current;
  if (s_.total_steps > 0) {  // the move must pay for itself over the steps left (see the header)
    const double now = *std::max_element(d.stage_ms.begin(), d.stage_ms.end());
    d.cost_ms = history_.move_cost_ms >= 0 ? history_.move_cost_ms : 4.0 * now;
    d.saved_ms = (now - now / d.gain) * double(std::max(0, s_.total_steps - step));
    d.move = d.move && d.saved_ms > 2.0 * d.cost_ms;
  }
  history_.last_evaluation = step;
  return d;
}

}  // namespace gt
