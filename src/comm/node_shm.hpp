#pragma once
// A group's shared-memory region on one node, holding named byte ranges that every rank of the group reads
// directly, with a few flags per rank to say what may be read. ZeRO uses it (src/train/dp/: the step's gathers and
// reduce-scatters at stages 2/3 with staged gradients, the parameter all-gather after the update at stages 1/2),
// with no MPI call. This file knows bytes and names only; the data-parallel package says which of the TrainState's
// buffers go here (src/train/dp/zero.hpp: share_buffers).
//
// Why: a non-blocking MPI collective (MPICH here) moves data only while its ranks are inside MPI calls. The
// per-unit reduce-scatters of staged gradients (src/train/dp/zero_grads.hpp) and the per-unit gathers of
// ZeRO-3 (src/train/dp/zero_gather.hpp) therefore ran when each was waited, as exposed communication, and a unit's wait also waited
// for the slowest rank to reach it: `small` at dp=2 ran 1.27-1.41x zero 0's step time at zero 2 (docs/zero.md).
// On one node every rank can read every other rank's memory, so:
//   - the buffers the peers read (this rank's parameter shard at ZeRO-3 or its working parameters at 1/2, its
//     gradient staging buffers) are moved into the registered region (Comm::alloc_registered), at the same
//     offset on every rank; so is the full gradient buffer the shm all-reduce sums in place at zero 0/1;
//   - a gather is a memcpy of each rank's piece straight out of its shard;
//   - a reduce-scatter is this rank summing, in rank order 0..p-1 (the shm all-reduce's order: zero 0's bits),
//     its shard's piece of every rank's staging buffer into its reduced-gradient shard.
// The only synchronisation is a few flags per rank in a header of the region, each written by its owner only
// (release) and read by the others (acquire):
//   done[u]      = s: this rank's gradients of unit u in step s are staged (the peers may sum them)
//   consumed[u]  = s: this rank has summed its piece of unit u of step s (the peers may reuse that buffer)
//   version      = v: this rank's parameter shard is current for the v-th invalidation (the peers may gather)
// A rank that must wait spins on the flags (yielding), and while it waits it does the summing it can do, so
// two ranks never wait on each other (docs/zero.md, "ZeRO on one node"). The wait counts as blocked DP
// communication and is watched by the communication watchdog.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/comm.hpp"

namespace gt {

// A named byte range to place in the region: `bytes` bytes, starting as the bytes at `data` (null: zero).
struct SharedBytes {
  std::string name;
  const void* data = nullptr;
  size_t bytes = 0;
};

class NodeShm {
 public:
  enum Flag { Done = 0, Consumed = 1 };
  // Collective over the group. Places the ranges in this rank's part of the region (each on pages of its own, at
  // the same offset on every rank), copies their bytes in, with flags for the unit ids first_unit..last_unit;
  // nullptr (nothing placed) when the group's communicator has no registered region (ranks on several nodes,
  // parallel.allreduce other than shm, a GPU build): the caller's MPI path runs then. From here on the owner of a
  // range uses mine(name) instead of its old memory.
  static std::unique_ptr<NodeShm> create(Comm& group, const std::vector<SharedBytes>& ranges, int first_unit,
                                         int last_unit);

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's copy of a range, and rank k's (laid out as this rank's).
  unsigned char* mine(const std::string& name) { return bases_[size_t(rank_)] + offset_.at(name); }
  const unsigned char* peer(int k, const std::string& name) const;

  void set(Flag f, int unit, uint64_t value);  // this rank's flag (release)
  uint64_t get(int k, Flag f, int unit) const;  // rank k's flag (acquire)
  // Whether every rank's flag f of unit u has reached s.
  bool all_reached(Flag f, int unit, uint64_t s) const;
  // This rank's parameters (its shard of them) are current: the peers may copy them until the next publish.
  // Every rank publishes at the same points (ZeRO: ZeroGather::invalidate at stage 3, after each update at 1-2).
  void publish_params();
  // Until rank k has published as often as this rank (its shard is as current as ours).
  void wait_params(int k, const char* what);
  // Every rank's equal shard of a range (rank k's: bytes [k shard_bytes, (k + 1) shard_bytes)) copied from that
  // rank into this rank's copy (ZeRO-1/2 after the update: the working parameters). Publishes this rank's first.
  void allgather_shards(const std::string& name, size_t shard_bytes);

  // Spins (yielding the core) until ready() holds, calling poll() between looks; counted as blocked DP
  // communication and watched as `what` on the DP group.
  void wait_until(const char* what, const std::function<bool()>& ready, const std::function<void()>& poll);

 private:
  NodeShm(Comm& group, int first_unit, int units) : dp_(group), first_unit_(first_unit), units_(units) {}
  uint64_t* flag(int k, Flag f, int unit) const;
  Comm& dp_;
  int first_unit_, units_;  // the flags of unit u at index u - first_unit_
  int rank_ = 0, size_ = 1;
  std::vector<unsigned char*> bases_;      // every rank's part of the region
  std::map<std::string, size_t> offset_;   // of each range in a part
  uint64_t published_ = 0;                 // publish_params calls so far
};

}  // namespace gt
