#pragma once
// One real training run inside a test, on the layout its config names, and what the tests compare afterwards.
// The layout, restart, ZeRO and precision tests each ran the same dozen lines; they differ only in what they read
// from the finished trainer, which they now say in the `inspect` callback (or take the common RunRecord).
#include <gtest/gtest.h>
#include <mpi.h>

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

inline RunRecord run_and_record(MPI_Comm comm, const gt::Config& c, int expect_exit = 0, bool with_grads = true) {
  RunRecord r;
  run_trainer(comm, c, expect_exit, [&](gt::Trainer& t) {
    for (const auto& s : t.history()) {
      r.losses.push_back(s.loss);
      r.val.push_back(s.val_loss);
      r.grad_norms.push_back(s.grad_norm);
    }
    if (with_grads) r.grads = t.gather(gt::Buffer::Grads);
    r.params = t.gather_params();
  });
  return r;
}

}  // namespace gt_test
