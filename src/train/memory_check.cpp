#include "src/train/memory_check.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/device_stream.hpp"
#include "src/core/error.hpp"
#include "src/core/test_hooks.hpp"
#include "src/plan/memory.hpp"

namespace gt {

namespace {

// A "Key:   123 kB" line of a /proc file, in bytes; -1 when absent. GRIDTRAIN_TEST_MEMAVAILABLE_MB replaces
// MemAvailable (tests of the refusal that do not depend on the machine's free memory).
double proc_kb(const char* file, const char* key) {
  if (std::string(key) == "MemAvailable:" && test_hooks::mem_available_bytes() >= 0)
    return test_hooks::mem_available_bytes();
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::atof(line.c_str() + std::strlen(key)) * 1024.0;
  return -1;
}

std::string gib(double b) {
  char s[32];
  std::snprintf(s, sizeof s, b < 1073741824.0 ? "%.0f MiB" : "%.1f GiB", b < 1073741824.0 ? b / 1048576.0 : b / 1073741824.0);
  return s;
}

}  // namespace

void check_memory_fits(const Config& cfg, Grid& grid) {
  plan::Layout l;
  l.tp = grid.shape().tp;
  l.pp = grid.shape().pp;
  l.dp = grid.shape().dp;
  l.micro_batch = cfg.train.micro_batch_size;
  l.micro_batches = cfg.train.micro_batches;
  l.zero = cfg.parallel.zero;
  const ConfigChoices choice = cfg.choices();
  l.precision = choice.precision;  // one enum for train and plan (src/core/enums.hpp)
  l.gpipe = choice.schedule == PipelineSchedule::GPipe;
  l.device_split = kernels_on_device();  // a GPU build's kernels keep the device split's larger scratch
  plan::MemoryBreakdown b;
  try {
    b = plan::stage_memory(plan::ModelShape::from(cfg.model), l, plan::Framework::Gridtrain, grid.pp_rank());
  } catch (const Error&) {
    return;  // a layout the planner cannot split (n_layer < pp): the trainer names the problem in its own words
  }
  const double mine = b.total();

  // The ranks of this node share its memory.
  MPI_Comm node;
  MPI_Comm_split_type(grid.world_mpi(), MPI_COMM_TYPE_SHARED, grid.world_rank(), MPI_INFO_NULL, &node);
  double on_node = mine;
  int node_ranks = 1;
  MPI_Allreduce(MPI_IN_PLACE, &on_node, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Comm_size(node, &node_ranks);
  MPI_Comm_free(&node);

  std::string problem;
  // GPU builds: the ledger is device memory (one device per rank), so it is held against the device's free memory.
  // The host's MemAvailable and address-space limit mean nothing for it (CUDA maps a huge address space).
  const double device_free = device_free_bytes();
  if (device_free >= 0 && mine > device_free)
    problem = gib(mine) + " per rank but its device has " + gib(device_free) + " free (cudaMemGetInfo)";
  const double available = kernels_on_device() ? -1 : proc_kb("/proc/meminfo", "MemAvailable:");
  if (problem.empty() && available > 0 && on_node > available)
    problem = gib(on_node) + " for the " + std::to_string(node_ranks) + " rank(s) of this node but " + gib(available) +
              " is available (MemAvailable)";
  struct rlimit as;
  const double mapped = proc_kb("/proc/self/status", "VmSize:");
  if (problem.empty() && !kernels_on_device() && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      mine + std::max(0.0, mapped) > double(as.rlim_cur))
    problem = gib(mine) + " per rank on top of the " + gib(mapped) + " already mapped, but the address-space limit " +
              "(ulimit -v) is " + gib(double(as.rlim_cur));
  // Every rank fails alike with the words of the first rank that cannot fit.
  int first = problem.empty() ? grid.world_size() : grid.world_rank();
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, grid.world_mpi());
  if (first == grid.world_size()) return;
  std::ostringstream os;
  os << "memory: this layout needs about " << gib(mine) << " per rank (model state " << gib(b.states())
     << ", activations " << gib(b.activations) << ", work buffers " << gib(b.workspace + b.comm_buffers) << "): "
     << problem;
  std::string text = os.str();
  int len = int(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, grid.world_mpi());
  text.resize(size_t(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, grid.world_mpi());
  throw Error(text + "; lower it with parallel.tp or parallel.pp (split the model), parallel.zero (shard the state over DP), "
        "train.micro_batch_size (activations) or train.precision (`gridtrain plan` ranks the layouts that fit)");
}

}  // namespace gt
