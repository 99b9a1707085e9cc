// Top-k compression benchmark (issue 11).
//   mpiexec -n 2 build/bench/bench_compress [--n 4194304] [--iters 5] [--out runs/bench/compress.json]
// 1. Selection cost on one rank for a bucket of n gradients (normal values): exact (nth_element over an index
//    array) vs sampled threshold (DGC), at densities 10%..0.1%, and error feedback's accumulate + take, beside
//    one float memcpy of the bucket for scale.
// 2. With more than one rank: one bucket's all-reduce, dense fp32 (MPI) vs top-k through each transport
//    (error feedback and exact selection included), time = median over --iters of the slowest rank.
// Run it under scripts/emulate_cluster.sh to see where compression pays on a given link.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "src/train/compress/topk_allreduce.hpp"

namespace gc = gt::compress;

namespace {

double median_time(int iters, const std::function<void()>& f, MPI_Comm comm) {
  std::vector<double> t;
  for (int i = 0; i <= iters; ++i) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    f();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (i > 0) t.push_back(dt);  // the first is a warm-up
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  size_t n = size_t(1) << 22;
  int iters = 5;
  std::string out = "runs/bench/compress.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--n") n = std::stoul(argv[i + 1]);
    else if (k == "--iters") iters = std::stoi(argv[i + 1]);
    else if (k == "--out") out = argv[i + 1];
  }
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::mt19937_64 g(7 + rank);
  std::normal_distribution<float> u(0.f, 1.f);
  std::vector<float> grad(n), scratch(n);
  for (auto& x : grad) x = u(g);
  const std::string load = gt::bench::shell_line("cut -d' ' -f1-3 /proc/loadavg");
  std::string json = "{\"ranks\":" + std::to_string(p) + ",\"n\":" + std::to_string(n) + ",\"loadavg\":\"" + load +
                     "\",\"select\":[";
  MPI_Comm self = MPI_COMM_SELF;
  const double t_copy = median_time(iters, [&] { std::memcpy(scratch.data(), grad.data(), n * 4); }, self);
  if (rank == 0)
    std::printf("ranks %d  bucket %zu floats  load %s  memcpy %.3f ms\n%8s %12s %12s %10s %14s\n", p, n, load.c_str(),
                t_copy * 1e3, "density", "exact_ms", "sampled_ms", "sampled_k", "ef_take_ms");
  bool first = true;
  for (double d : {0.1, 0.04, 0.01, 0.001}) {
    const size_t k = gc::topk_count(n, d);
    std::vector<int32_t> idx;
    const double te = median_time(iters, [&] { gc::select_exact(grad.data(), n, k, idx); }, self);
    const double ts = median_time(iters, [&] { gc::select_sampled(grad.data(), n, k, 11, idx); }, self);
    const size_t ks = idx.size();
    std::vector<float> resid(n, 0.0f), val(k);
    gc::ErrorFeedback ef(resid.data(), n);
    gc::select_exact(grad.data(), n, k, idx);
    const double tt = median_time(iters, [&] {
      ef.accumulate(grad.data());
      ef.take(idx.data(), k, val.data());
    }, self);
    if (rank == 0) std::printf("%8.3f %12.3f %12.3f %10zu %14.3f\n", d, te * 1e3, ts * 1e3, ks, tt * 1e3);
    gt::bench::append_row(json, first,
                          "{\"density\":%g,\"k\":%zu,\"exact_s\":%.6g,\"sampled_s\":%.6g,\"sampled_k\":%zu,\"ef_s\":%.6g}",
                          d, k, te, ts, ks, tt);
  }
  json += "],\"allreduce\":[";
  if (p > 1) {
    auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
    const double td = median_time(iters, [&] {
      std::memcpy(scratch.data(), grad.data(), n * 4);
      comm->allreduce_sum(scratch.data(), n);
    }, MPI_COMM_WORLD);
    if (rank == 0) std::printf("\n%-22s %10s %12s %10s\n%-22s %10s %12.3f %10.1f\n", "all-reduce of a bucket", "density",
                               "time_ms", "MB_sent", "dense fp32 (mpi)", "1", td * 1e3, 2.0 * (p - 1) / p * 4 * n / 1e6);
    json += "{\"method\":\"dense_fp32\",\"density\":1,\"time_s\":" + std::to_string(td) + "}";
    for (bool shared : {false, true}) {
      if (shared && p == 2) continue;  // at 2 ranks both send the same bytes and the chooser takes all-gather
      for (double d : {0.1, 0.04, 0.01, 0.001}) {
        gc::TopkOptions o;
        o.density = d;
        o.allow_shared = shared;
        std::vector<float> resid(n, 0.0f);
        gc::ErrorFeedback ef(resid.data(), n);
        gc::TopkResult r;
        const double t = median_time(iters, [&] {
          std::memcpy(scratch.data(), grad.data(), n * 4);
          r = gc::topk_allreduce(*comm, ef, scratch.data(), n, o);
        }, MPI_COMM_WORLD);
        const std::string name = std::string("topk ") + gc::transport_name(r.transport);
        if (rank == 0) std::printf("%-22s %10.3f %12.3f %10.1f\n", name.c_str(), d, t * 1e3, r.wire_bytes / 1e6);
        json += ",{\"method\":\"" + name + "\",\"density\":" + std::to_string(d) + ",\"time_s\":" + std::to_string(t) +
                ",\"wire_bytes\":" + std::to_string(r.wire_bytes) + "}";
      }
    }
  }
  json += "]}\n";
  if (rank == 0) gt::bench::write_text(out, json, "bench_compress");
  MPI_Finalize();
  return 0;
}
