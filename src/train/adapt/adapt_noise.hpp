#pragma once
// The measured-noise rule the live adapters share (docs/adaptive.md): a predicted gain is believed only when it
// is >= 1 + t, t = max(parallel.rebalance_gain, noise_factor x spread), the spread being the relative
// interquartile range (p75 - p25) / median of a time over the evaluation's window. The interquartile range, not
// p90 - p10: like the median it ignores one outlier in a window of 5 (the slow-rank hook's first sleep on the
// warm-up step's compute, a step that wrote a checkpoint). Why noise_factor 2: for normal noise the interquartile
// range is 1.35 sigma, so the bar is 2.7 sigma of the step-to-step noise, about 4.8 standard errors of a median
// over 5 steps (1.25 sigma / sqrt(5)). Used by the data-parallel shares' decider (dp/dp_share_adapt.*), the
// pipeline's (adapt_decider.*) and the layout's (layout_decider.*).
#include <algorithm>
#include <vector>

namespace gt::adapt_noise {

inline constexpr double kNoiseFactor = 2.0;

// The q-quantile of sorted values, interpolated linearly between neighbours (q = 0.5: the median).
inline double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = size_t(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

// Each rank's median over a window: steps[i][r] is rank r's time in the window's step i (every step the same
// ranks); the middle value, or the mean of the middle two for an even count. The per-rank figure the pipeline
// decider (adapt_decider.*) evaluates and the layout guard (layout_guard.*) judges.
inline std::vector<double> rank_medians(const std::vector<std::vector<double>>& steps) {
  if (steps.empty()) return {};
  std::vector<double> med(steps.front().size()), col(steps.size());
  for (size_t r = 0; r < med.size(); ++r) {
    for (size_t i = 0; i < steps.size(); ++i) col[i] = steps[i][r];
    std::sort(col.begin(), col.end());
    const size_t n = col.size();
    med[r] = n % 2 ? col[n / 2] : 0.5 * (col[n / 2 - 1] + col[n / 2]);
  }
  return med;
}

// (p75 - p25) / median of `values` (any order); 0 when the median is not positive.
inline double relative_spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const double med = quantile(values, 0.5);
  return med > 0 ? (quantile(values, 0.75) - quantile(values, 0.25)) / med : 0.0;
}

// The bar a predicted gain must reach: 1 + max(threshold, noise_factor x spread).
inline double needed_gain(double threshold, double spread, double noise_factor = kNoiseFactor) {
  return 1.0 + std::max(threshold, noise_factor * spread);
}

}  // namespace gt::adapt_noise
