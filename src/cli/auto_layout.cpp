#include "src/cli/auto_layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "src/core/error.hpp"
#include "src/plan/plan_cli.hpp"
#include "src/plan/planner.hpp"
#include "src/train/report/metrics.hpp"

namespace gt {

namespace {

// Resident set of this process now (bytes): what MPI, Kokkos and the libraries hold before the model exists.
double current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

// Seconds of one in-place MPI_Allreduce of `floats` floats over `comm`, the fastest of `reps` (the fastest
// run is the one least disturbed by the other processes of a shared machine).
double probe_allreduce(MPI_Comm comm, int floats, int reps) {
  std::vector<float> buf(size_t(floats), 1.0f);
  MPI_Allreduce(MPI_IN_PLACE, buf.data(), floats, MPI_FLOAT, MPI_SUM, comm);  // warm-up (connections, buffers)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), floats, MPI_FLOAT, MPI_SUM, comm);
    best = std::min(best, MPI_Wtime() - t0);
  }
  return best;
}

// Alpha-beta of the ring all-reduce model the planner uses (step_time.cpp: 2(k-1) alpha + 2(k-1)/k n / B)
// from one tiny and one large message: the tiny one is all latency, the large one's remainder is bandwidth.
plan::LinkLevel probe_link(MPI_Comm comm) {
  int k = 1;
  MPI_Comm_size(comm, &k);
  plan::LinkLevel l;
  if (k < 2) return l;
  constexpr int kLarge = 1 << 19;  // 2 MiB: past the eager sizes, small against the model (peak RSS)
  const double t_small = probe_allreduce(comm, 2, 20);
  const double t_large = probe_allreduce(comm, kLarge, 4);
  l.latency_us = t_small / (2.0 * (k - 1)) * 1e6;
  const double bytes = 2.0 * (k - 1) / k * kLarge * sizeof(float);
  l.gbs = bytes / std::max(t_large - t_small, 1e-9) / 1e9;
  l.efficiency = 1.0;  // measured, not a datasheet figure
  return l;
}

std::string describe(const plan::Candidate& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: %.1f ms/step, %.3f GB", c.layout.str().c_str(), c.time.step * 1e3,
                c.memory.total() / 1e9);
  return buf;
}

}  // namespace

plan::Cluster measure_cluster(MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0, per_node = 1;
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &per_node);
  MPI_Comm leaders;  // one rank per node: the inter-node probe
  MPI_Comm_split(world, local == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int nodes = 1;
  if (leaders != MPI_COMM_NULL) MPI_Comm_size(leaders, &nodes);
  MPI_Bcast(&nodes, 1, MPI_INT, 0, node);

  const plan::LinkLevel intra = probe_link(node);
  plan::LinkLevel inter = intra;
  if (leaders != MPI_COMM_NULL && nodes > 1) inter = probe_link(leaders);
  // Every rank must plan with the same numbers: the slowest link and core anywhere, the smallest memory.
  const double sgemm = measure_sgemm_gflops(512, 3);  // 3 MiB of matrices: no mark on the peak RSS
  const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  double worst[8] = {intra.latency_us, -intra.gbs, inter.latency_us, -inter.gbs, -sgemm, current_rss_bytes(),
                     -phys / per_node, double(per_node)};
  MPI_Allreduce(MPI_IN_PLACE, worst, 8, MPI_DOUBLE, MPI_MAX, world);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&node);

  plan::Cluster c;
  char name[200];
  std::snprintf(name, sizeof name,
                "measured: %d node(s) x %d ranks, sgemm %.0f GFLOP/s, all-reduce %.1f us + %.2f GB/s in a node",
                nodes, int(worst[7]), -worst[4], worst[0], -worst[1]);
  c.name = name;
  c.devices_per_node = int(worst[7]);
  c.memory_gb = -worst[6] / 1e9;
  c.memory_reserved_gb = worst[5] / 1e9;
  c.peak_tflops_fp32 = c.peak_tflops_bf16 = c.peak_tflops_fp16 = -worst[4] / 1e3;
  // The shape of the GEMM efficiency curve against size is cpu-2core.toml's (measured on this VM's cores):
  // here against the sgemm rate, which is that curve's large end.
  c.gemm_flops = {1e7, 1e8, 1e9, 1e10};
  c.gemm_efficiency = {0.55, 0.83, 0.94, 1.0};
  c.attention_efficiency = 0.4;
  c.memory_gbs = 20;  // not probed (a stream test would mark the peak RSS): a DDR4/5 channel share per core
  c.memory_efficiency = 0.85;
  c.intra = plan::LinkLevel{-worst[1], worst[0], 1.0};
  c.inter = plan::LinkLevel{-worst[3], worst[2], 1.0};
  return c;
}

AutoLayout choose_auto_layout(const Config& cfg, MPI_Comm world) {
  int size = 1;
  MPI_Comm_size(world, &size);
  const plan::Cluster c = cfg.parallel.cluster.empty() ? measure_cluster(world)
                                                       : plan::load_cluster(plan::resolve_cluster(cfg.parallel.cluster));
  const int tp = cfg.parallel.tp > 1 ? cfg.parallel.tp : 0, pp = cfg.parallel.pp > 1 ? cfg.parallel.pp : 0;
  const plan::AutoChoice a = plan::choose_layout(plan::ModelShape::from(cfg.model), c, size,
                                                 cfg.train.micro_batch_size, cfg.train.micro_batches, tp, pp,
                                                 cfg.parallel.sequence_parallel);
  if (cfg.parallel.dp > 0 && cfg.parallel.dp != a.best.layout.dp)
    throw Error("parallel.layout = auto chose dp " + std::to_string(a.best.layout.dp) + " (" + describe(a.best) +
                ") but the deck fixes parallel.dp = " + std::to_string(cfg.parallel.dp) + "; leave dp at 0");
  AutoLayout out;
  out.tp = a.best.layout.tp;
  out.pp = a.best.layout.pp;
  out.dp = a.best.layout.dp;
  out.cluster = c.name;
  out.choice = describe(a.best);
  out.runner_up = a.has_runner_up ? describe(a.runner_up) : "none";
  return out;
}

}  // namespace gt
