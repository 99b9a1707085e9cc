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

// What this rank can use: its node's MemAvailable shared by the node's ranks, the address-space limit, the device.
struct Room {
  int node_ranks = 1;
  double available = -1, mapped = -1, as_limit = -1, device_free = -1;
};

Room measure_room(Grid& grid) {  // collective (the node's communicator)
  Room r;
  MPI_Comm node;
  MPI_Comm_split_type(grid.world_mpi(), MPI_COMM_TYPE_SHARED, grid.world_rank(), MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &r.node_ranks);
  MPI_Comm_free(&node);
  // GPU builds: the ledger is device memory (one device per rank), so it is held against the device's free memory.
  // The host's MemAvailable and address-space limit mean nothing for it (CUDA maps a huge address space).
  r.device_free = device_free_bytes();
  r.available = kernels_on_device() ? -1 : proc_kb("/proc/meminfo", "MemAvailable:");
  r.mapped = proc_kb("/proc/self/status", "VmSize:");
  struct rlimit as;
  if (!kernels_on_device() && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) r.as_limit = double(as.rlim_cur);
  return r;
}

// Why `mine` bytes per rank (`on_node` for the node's ranks together) do not fit; "" when they do. Rank-local.
std::string why_not(const Room& r, double mine, double on_node) {
  if (r.device_free >= 0 && mine > r.device_free)
    return gib(mine) + " per rank but its device has " + gib(r.device_free) + " free (cudaMemGetInfo)";
  if (r.available > 0 && on_node > r.available)
    return gib(on_node) + " for the " + std::to_string(r.node_ranks) + " rank(s) of this node but " + gib(r.available) +
           " is available (MemAvailable)";
  if (r.as_limit > 0 && mine + std::max(0.0, r.mapped) > r.as_limit)
    return gib(mine) + " per rank on top of the " + gib(r.mapped) + " already mapped, but the address-space limit " +
           "(ulimit -v) is " + gib(r.as_limit);
  return "";
}

// Every rank fails alike with the words of the first rank that cannot fit (what(problem) makes them). Collective.
template <class What>
void agree_fit(Grid& grid, const std::string& problem, What what) {
  int first = problem.empty() ? grid.world_size() : grid.world_rank();
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, grid.world_mpi());
  if (first == grid.world_size()) return;
  std::string text = grid.world_rank() == first ? what(problem) : std::string();
  int len = int(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, grid.world_mpi());
  text.resize(size_t(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, grid.world_mpi());
  throw Error(text + "; lower it with parallel.tp or parallel.pp (split the model), parallel.zero (shard the state over DP), "
        "train.micro_batch_size (activations) or train.precision (`gridtrain plan` ranks the layouts that fit)");
}

}  // namespace

void check_memory_fits(const Config& cfg, Grid& grid) {
  const Room room = measure_room(grid);
  // First a floor in closed form, before any per-layer work (the ledger below partitions the layers over the
  // stages): parameters, gradients and AdamW moments take at least 16 bytes per parameter over all the ranks
  // (fp32: 4 + 4 + 8; 16-bit: 2 + 2 + 4 master + 8), split at best evenly over tp x pp x dp (ZeRO-3).
  const plan::ModelShape shape = plan::ModelShape::from(cfg.model);
  const double floor = 16.0 * shape.total_params() / double(grid.world_size());
  agree_fit(grid, why_not(room, floor, floor * room.node_ranks), [&](const std::string& why) {
    char n[32];
    std::snprintf(n, sizeof n, "%.3g", shape.total_params());
    return "memory: this model's parameters, gradients and AdamW moments alone need at least " + gib(floor) +
           " per rank (" + n + " parameters, 16 bytes each, over " + std::to_string(grid.world_size()) + " ranks): " + why;
  });

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
  l.sequence_parallel = cfg.parallel.sequence_parallel && l.tp > 1;  // the ledger divides the split rows by tp
  l.device_split = kernels_on_device();  // a GPU build's kernels keep the device split's larger scratch
  plan::MemoryBreakdown b;
  try {
    b = plan::stage_memory(shape, l, plan::Framework::Gridtrain, grid.pp_rank());
  } catch (const Error&) {
    b = plan::MemoryBreakdown{};  // a layout the planner cannot split (n_layer < pp): the trainer names the problem
  }
  const double mine = b.total();
  double on_node = mine;  // the ranks of this node share its memory
  MPI_Comm node;
  MPI_Comm_split_type(grid.world_mpi(), MPI_COMM_TYPE_SHARED, grid.world_rank(), MPI_INFO_NULL, &node);
  MPI_Allreduce(MPI_IN_PLACE, &on_node, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Comm_free(&node);
  agree_fit(grid, why_not(room, mine, on_node), [&](const std::string& why) {
    std::ostringstream os;
    os << "memory: this layout needs about " << gib(mine) << " per rank (model state " << gib(b.states())
       << ", activations " << gib(b.activations) << ", work buffers " << gib(b.workspace + b.comm_buffers) << "): " << why;
    return os.str();
  });
}

}  // namespace gt
