#include "src/train/report/step_stats.hpp"

#include <array>
#include <cmath>

namespace gt {

namespace {
// The summed fields, in the one order both sides of the reduction agree on.
constexpr int kSums = 13;
}  // namespace

StepStats reduce_step_stats(const StepTimes& t, Comm& world, double tokens_per_step) {
  double sum[kSums] = {t.loss_sum,   t.stop_requested ? 1.0 : 0.0, t.step_ms,       t.fwd_ms,
                       t.bwd_ms,     t.opt_ms,                     t.data_ms,       t.comm_tp_ms,
                       t.comm_pp_ms, t.comm_dp_ms,                 t.comm_other_ms, t.compute_ms(),
                       t.energy_j};  // NaN on any rank makes the sum NaN: no partial total
  double mx[2] = {t.step_ms, t.compute_ms()};
  world.allreduce(sum, kSums, DType::F64, ReduceOp::Sum);
  world.allreduce(mx, 2, DType::F64, ReduceOp::Max);
  const double W = world.size();
  StepStats s;
  s.loss = sum[0] / tokens_per_step;
  s.stop_requested = sum[1] > 0;
  s.ms = sum[2] / W;
  s.fwd_ms = sum[3] / W;
  s.bwd_ms = sum[4] / W;
  s.opt_ms = sum[5] / W;
  s.data_ms = sum[6] / W;
  s.comm_tp_ms = sum[7] / W;
  s.comm_pp_ms = sum[8] / W;
  s.comm_dp_ms = sum[9] / W;
  s.comm_other_ms = sum[10] / W;
  s.compute_ms = sum[11] / W;
  s.energy_j = std::isfinite(sum[12]) ? sum[12] : -1.0;
  s.ms_max = mx[0];
  s.compute_ms_max = mx[1];
  return s;
}

StepStats mean_step_stats(const StepStats* begin, const StepStats* end) {
  StepStats m;
  const auto fields = [](StepStats& s) {
    return std::array<double*, 12>{&s.ms,         &s.ms_max,     &s.fwd_ms,     &s.bwd_ms,
                                   &s.opt_ms,     &s.data_ms,    &s.comm_tp_ms, &s.comm_pp_ms,
                                   &s.comm_dp_ms, &s.comm_other_ms, &s.compute_ms, &s.compute_ms_max};
  };
  const auto acc = fields(m);
  for (const StepStats* p = begin; p != end; ++p) {
    StepStats s = *p;
    const auto f = fields(s);
    for (size_t k = 0; k < acc.size(); ++k) *acc[k] += *f[k];
  }
  const long n = end - begin;
  if (n > 0)
    for (double* x : acc) *x /= double(n);
  return m;
}

}  // namespace gt
