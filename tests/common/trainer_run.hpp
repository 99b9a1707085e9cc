#pragma once
// One real training run inside a test, on the layout its config names, and what the tests compare afterwards.
// The layout, restart, ZeRO and precision tests each ran the same dozen lines; they differ only in what they read
// from the finished trainer, which they now say in the `inspect` callback (or take the common RunRecord).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "src/grid/grid.hpp"
#include "src/train/trainer.hpp"

namespace gt_test {

using NamedTensors = std::vector<std::pair<std::string, std::vector<float>>>;

// Builds the grid (tp, pp, dp, allreduce of c) over comm, trains, expects exit code `expect_exit`, then calls
// inspect(trainer) while the trainer still exists (gathers are collective: every rank calls it).
template <class Inspect>
void run_trainer(MPI_Comm comm, const gt::Config& c, int expect_exit, Inspect&& inspect) {
  gt::Grid grid(comm, c.parallel.tp, c.parallel.pp, c.parallel.dp, gt::parse_allreduce_algo(c.parallel.allreduce));
  gt::Trainer t(c, grid, c.to_toml());
  EXPECT_EQ(t.run(), expect_exit);
  inspect(t);
}

// The per-step losses, validation losses and gradient norms, the gradients of the last step and the parameters,
// all gathered in global shapes.
struct RunRecord {
  std::vector<double> losses, val, grad_norms;
  NamedTensors grads, params;
};

// extra(trainer) then reads what a test needs beyond the record (the trainer still exists).
template <class Extra>
RunRecord run_and_record(MPI_Comm comm, const gt::Config& c, int expect_exit, bool with_grads, Extra&& extra) {
  RunRecord r;
  run_trainer(comm, c, expect_exit, [&](gt::Trainer& t) {
    for (const auto& s : t.history()) {
      r.losses.push_back(s.loss);
      r.val.push_back(s.val_loss);
      r.grad_norms.push_back(s.grad_norm);
    }
    if (with_grads) r.grads = t.gather(gt::Buffer::Grads);
    r.params = t.gather_params();
    extra(t);
  });
  return r;
}
inline RunRecord run_and_record(MPI_Comm comm, const gt::Config& c, int expect_exit = 0, bool with_grads = true) {
  return run_and_record(comm, c, expect_exit, with_grads, [](gt::Trainer&) {});
}

// train.recompute = selective and full against ref, the same run (c) without recomputation: the losses, the last
// step's gradients and the parameters bit for bit (recomputing repeats the same operations in the same order).
// Each mode's output in out_prefix + mode.
inline void expect_recompute_bitwise(const gt::Config& c, const RunRecord& ref, const std::string& out_prefix) {
  for (const char* mode : {"selective", "full"}) {
    gt::Config r = c;
    r.train.recompute = mode;
    r.output.dir = out_prefix + mode;
    const RunRecord got = run_and_record(MPI_COMM_WORLD, r);
    EXPECT_EQ(got.losses, ref.losses) << mode;
    ASSERT_EQ(got.grads.size(), ref.grads.size());
    for (size_t k = 0; k < got.grads.size(); ++k) {
      EXPECT_EQ(got.grads[k].second, ref.grads[k].second) << mode << " gradient of " << got.grads[k].first;
      EXPECT_EQ(got.params[k].second, ref.params[k].second) << mode << " parameter " << got.params[k].first;
    }
  }
}

// The largest |x[i] - y[i]|: a tensor's worst element against a reference's.
inline double max_abs_diff(const std::vector<float>& x, const std::vector<float>& y) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, double(std::fabs(x[i] - y[i])));
  return worst;
}

// Parameters after a few steps against a reference run's, per tensor (the same names in the same order): a
// norm-wise relative gap below rel and no element off by more than steps * lr. test_layouts' tolerance and its
// reasoning: Adam amplifies round-off in elements whose gradient is at the level of fp32 round-off (the key bias
// above all).
inline void expect_params_close(const NamedTensors& a, const NamedTensors& b, const gt::Config& c, double rel = 1e-3) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    const auto& x = a[k].second;
    const auto& y = b[k].second;
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      num += double(x[i] - y[i]) * (x[i] - y[i]);
      den += double(y[i]) * y[i];
    }
    EXPECT_LT(std::sqrt(num / std::max(den, 1e-30)), rel) << a[k].first;
    EXPECT_LT(max_abs_diff(x, y), c.train.steps * c.train.lr) << a[k].first;
  }
}

}  // namespace gt_test
