#pragma once
// Helpers for tests that run the real trainer: small configs and a fresh output directory per run.
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "src/core/config.hpp"

namespace gt_test {

// argc/argv as left by InitGoogleTest (set by tests/common/gtest_mpi_main.cpp).
extern int argc;
extern char** argv;

// A new directory under $TMPDIR (or /tmp), created on rank 0 of comm and broadcast to the others.
inline std::string fresh_dir(MPI_Comm comm, const std::string& tag) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char buf[512] = {0};
  if (rank == 0) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/gridtrain_" + tag + "_XXXXXX";
    snprintf(buf, sizeof buf, "%s", tmpl.c_str());
    if (!mkdtemp(buf)) buf[0] = 0;
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, comm);
  return buf;
}

inline gt::Config tiny_config(const std::string& out_dir) {
  gt::Config c;
  c.model.n_layer = 4;
  c.model.d_model = 32;
  c.model.n_head = 4;
  c.model.seq_len = 16;
  c.model.vocab_size = 64;
  c.train.steps = 5;
  c.train.micro_batch_size = 16;
  c.train.micro_batches = 1;
  c.train.lr = 1e-2;
  c.train.min_lr = 1e-3;
  c.train.warmup_steps = 0;
  c.train.weight_decay = 0.1;
  c.train.seed = 42;
  c.output.dir = out_dir;
  c.output.peak_gflops = 1.0;  // skip the start-up sgemm measurement
  c.output.log_every = 1000;
  c.checkpoint.save_final = false;
  return c;
}

// tiny_config on the learnable synthetic task: 2 layers, 64 wide, 32-token sequences with 10% noise in the data
// (SyntheticSource::optimal_loss is the loss to approach).
inline gt::Config learnable_config(const std::string& out_dir) {
  gt::Config c = tiny_config(out_dir);
  c.model.n_layer = 2;
  c.model.d_model = 64;
  c.model.seq_len = 32;
  c.train.micro_batch_size = 8;
  c.train.lr = 3e-3;
  c.train.min_lr = 3e-4;
  c.data.synthetic_noise = 0.1;
  return c;
}

}  // namespace gt_test
