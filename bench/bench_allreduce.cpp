// All-reduce benchmark: MPI library vs ring vs shm, float sum, sizes 4 KiB .. --max-mib (x4 steps).
// Rerun on an idle machine:  mpiexec -n 2 build/bench/bench_allreduce --max-mib 256 --out runs/bench/allreduce.json
// time = median of --iters iterations after one warm-up, barrier before each; algbw = bytes/time,
// busbw = algbw * 2(n-1)/n (nccl-tests). bound_s: the shm algorithm moves, per rank and byte of buffer,
// 4(n-1)/n + 1 + 2/n bytes of reads+writes; at the single-core memcpy rate B (bytes copied/s = half the
// read+write traffic) measured here, its best time is bytes * (4(n-1)/n + 1 + 2/n) / (2B), assuming every
// rank gets B at once.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "src/comm/comm.hpp"
#include "src/comm/shm_allreduce.hpp"

namespace {

double memcpy_gbs() {
  const size_t n = size_t(64) << 20;
  std::vector<char> a(n, 1), b(n, 2);
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    double t0 = MPI_Wtime();
    std::memcpy(b.data(), a.data(), n);
    t.push_back(MPI_Wtime() - t0);
    a[i] = b[n - 1 - i];
  }
  std::sort(t.begin(), t.end());
  return n / t[2] / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string out = "runs/bench/allreduce.json";
  int max_mib = 64, iters = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--out") out = argv[i + 1];
    else if (k == "--max-mib") max_mib = std::stoi(argv[i + 1]);
    else if (k == "--iters") iters = std::stoi(argv[i + 1]);
  }
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const double bw = memcpy_gbs() * 1e9;
  const double traffic = 4.0 * (p - 1) / p + 1 + 2.0 / p;
  auto lib = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  auto ring = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Ring);
  auto shm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Shm);
  // "shm-reg": the same algorithm on a buffer in the communicator's registered region (zero copy), as the
  // trainer's gradient store is on CPU builds with dp > 1 and parallel.allreduce=shm.
  auto shm_reg = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Shm);
  float* region = static_cast<float*>(shm_reg->alloc_registered(size_t(max_mib) << 20));
  std::string load = "?";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char b[128] = {0};
    if (std::fgets(b, sizeof b, f)) load = std::string(b, strcspn(b, "\n"));
    std::fclose(f);
  }
  std::string json = "{\"ranks\":" + std::to_string(p) + ",\"memcpy_GBs\":" + std::to_string(bw / 1e9) +
                     ",\"loadavg\":\"" + load + "\",\"rows\":[";
  if (rank == 0) std::printf("ranks %d  memcpy %.2f GB/s  load %s\n%10s %7s %12s %9s %9s %12s\n", p, bw / 1e9, load.c_str(),
                             "bytes", "algo", "time_s", "algbw", "busbw", "shm_bound_s");
  bool first = true;
  for (size_t bytes = 4096; bytes <= (size_t(max_mib) << 20); bytes *= (bytes < (size_t(1) << 20) ? 4 : 2)) {
    std::vector<float> buf(bytes / 4, 1.0f / (rank + 1));
    if (region) std::copy(buf.begin(), buf.end(), region);
    for (auto* c : {lib.get(), ring.get(), shm.get(), shm_reg.get()}) {
      if (c == shm_reg.get() && !region) continue;
      float* data = c == shm_reg.get() ? region : buf.data();
      std::vector<double> t;
      for (int it = 0; it <= iters; ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        c->allreduce_sum(data, buf.size());
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it > 0) t.push_back(dt);
      }
      std::sort(t.begin(), t.end());
      const double med = t[t.size() / 2], alg = bytes / med / 1e9, bus = alg * 2.0 * (p - 1) / p;
      const double bound = bytes * traffic / (2 * bw);
      const char* name = c == lib.get() ? "mpi" : c == ring.get() ? "ring" : c == shm.get() ? "shm" : "shm-reg";
      if (rank == 0) std::printf("%10zu %7s %12.6f %9.3f %9.3f %12.6f\n", bytes, name, med, alg, bus, bound);
      gt::bench::append_row(json, first,
                            "{\"bytes\":%zu,\"algo\":\"%s\",\"time_s\":%.7g,\"algbw_GBs\":%.4g,\"busbw_GBs\":%.4g,"
                            "\"shm_bound_s\":%.7g}",
                            bytes, name, med, alg, bus, bound);
    }
  }
  json += "]}\n";
  if (rank == 0) gt::bench::write_text(out, json, "bench_allreduce");
  lib.reset(); ring.reset(); shm.reset(); shm_reg.reset();
  MPI_Finalize();
  return 0;
}
