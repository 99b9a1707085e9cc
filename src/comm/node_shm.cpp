#include "src/comm/node_shm.hpp"

#include <mpi.h>
#include <sched.h>

#include <cstring>

#include "src/comm/watchdog.hpp"
#include "src/core/error.hpp"

namespace gt {

namespace {
constexpr size_t kAlign = 4096;  // every buffer on its own pages: no false sharing with the flags
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// A part's header: version (its own cache line), then done[units], then consumed[units], 64-bit each.
size_t header_bytes(int units) { return 64 + 2 * sizeof(uint64_t) * size_t(units); }
uint64_t* flag_at(unsigned char* base, int units, int f, int unit) {
  return reinterpret_cast<uint64_t*>(base + 64) + size_t(f) * size_t(units) + size_t(unit);
}
}  // namespace

std::unique_ptr<NodeShm> NodeShm::create(Comm& dp, const std::vector<SharedBytes>& ranges, int first_unit,
                                         int last_unit) {
  const int units = last_unit - first_unit + 1;
  if (dp.size() == 1 || units <= 0 || ranges.empty()) return nullptr;
  std::unique_ptr<NodeShm> z(new NodeShm(dp, first_unit, units));
  size_t off = round_up(header_bytes(units));
  for (const SharedBytes& r : ranges) {
    z->offset_[r.name] = off;
    off = round_up(off + r.bytes);
  }
  // Collective; the same answer on every rank (one node or not is agreed inside, and every rank asks once).
  auto* mine = static_cast<unsigned char*>(dp.alloc_registered(off));
  if (!mine) return nullptr;
  z->rank_ = dp.rank();
  z->size_ = dp.size();
  for (int k = 0; k < z->size_; ++k) {
    z->bases_.push_back(static_cast<unsigned char*>(dp.registered_peer(k)));
    if (!z->bases_.back()) throw Error("shm: the group's shared region of rank " + std::to_string(k) + " is missing");
  }
  for (const SharedBytes& r : ranges)
    if (r.data) std::memcpy(mine + z->offset_.at(r.name), r.data, r.bytes);
  dp.barrier();  // every rank's ranges are in place (and zero flags) before anyone reads a peer's
  return z;
}

const unsigned char* NodeShm::peer(int k, const std::string& name) const {
  return bases_[size_t(k)] + offset_.at(name);
}

uint64_t* NodeShm::flag(int k, Flag f, int unit) const {
  if (unit < first_unit_ || unit >= first_unit_ + units_)
    throw Error("shm: unit " + std::to_string(unit) + " has no flags in the shared region");
  return flag_at(bases_[size_t(k)], units_, f, unit - first_unit_);
}

void NodeShm::set(Flag f, int unit, uint64_t value) { __atomic_store_n(flag(rank_, f, unit), value, __ATOMIC_RELEASE); }

uint64_t NodeShm::get(int k, Flag f, int unit) const { return __atomic_load_n(flag(k, f, unit), __ATOMIC_ACQUIRE); }

bool NodeShm::all_reached(Flag f, int unit, uint64_t s) const {
  for (int k = 0; k < size_; ++k)
    if (get(k, f, unit) < s) return false;
  return true;
}

void NodeShm::publish_params() {
  __atomic_store_n(reinterpret_cast<uint64_t*>(bases_[size_t(rank_)]), ++published_, __ATOMIC_RELEASE);
}

void NodeShm::wait_params(int k, const char* what) {
  const auto* v = reinterpret_cast<const uint64_t*>(bases_[size_t(k)]);
  wait_until(what, [&] { return __atomic_load_n(v, __ATOMIC_ACQUIRE) >= published_; }, nullptr);
}

// A rank cannot update its shard again while another still copies it: its next update follows the next step's
// global-norm all-reduce, which the copying rank enters only after this copy and a whole forward and backward.
void NodeShm::allgather_shards(const std::string& name, size_t shard_bytes) {
  publish_params();
  unsigned char* out = mine(name);
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) continue;
    const size_t at = size_t(k) * shard_bytes;
    wait_params(k, "zero all-gather (shm)");
    std::memcpy(out + at, peer(k, name) + at, shard_bytes);
  }
}

void NodeShm::wait_until(const char* what, const std::function<bool()>& ready, const std::function<void()>& poll) {
  if (ready()) return;
  const double t0 = MPI_Wtime();
  watchdog::enter(what, dp_.watch_group());
  // Spin briefly (a peer one unit behind arrives within microseconds on an idle core), then yield: with more
  // ranks than cores the rank we wait for needs this core.
  for (int spins = 0; !ready(); ++spins) {
    if (poll) poll();
    if (spins > 100) sched_yield();
  }
  watchdog::leave();
  dp_.stats().blocked_seconds += MPI_Wtime() - t0;
}

}  // namespace gt
