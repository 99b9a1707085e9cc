#pragma once
// parallel.layout = auto: before the grid exists, every rank agrees on (tp, pp, dp) chosen by the planner
// (src/plan/planner.hpp, choose_layout) for the world size, the deck's model and micro-batching, and a cluster:
// the description named by parallel.cluster, or this machine measured now (measure_cluster).
#include <mpi.h>

#include <string>

#include "src/core/config.hpp"
#include "src/plan/cluster.hpp"

namespace gt {

struct AutoLayout {
  int tp = 1, pp = 1, dp = 1;
  std::string cluster;    // the description used: its name, or "measured: ..." with the probe's figures
  std::string choice;     // "tp1 pp2 dp1 b8 m4 fp32: 123.4 ms/step, 0.05 GB" (predicted)
  std::string runner_up;  // the same for the second best; "none" when only one layout fits
};

// Collective over `world`: every rank computes the same choice from the same inputs (the measurements are
// reduced over the world first). A deck's tp or pp above 1 stays fixed. Throws gt::Error, alike on every rank,
// naming the planner's rejection reasons when nothing fits.
AutoLayout choose_auto_layout(const Config& cfg, MPI_Comm world);

// This machine as a cluster description, collective, the same on every rank: ranks per node
// (MPI_Comm_split_type), memory per rank (physical memory / ranks per node, less this process's resident set
// as the reserve), the sgemm rate as the fp32 peak, and the all-reduce latency and bus bandwidth inside a node
// (and between node leaders when there are several nodes) from a short probe.
plan::Cluster measure_cluster(MPI_Comm world);

}  // namespace gt
