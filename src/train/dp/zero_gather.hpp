#pragma once
// ZeRO-3 (FSDP): the parameters of each unit (0 embedding, 1..L blocks, L+1 head; TensorSpec::unit) are
// all-gathered over the DP group just before a computation reads them, into one of two rotating buffers, and
// the store is pointed at the gathered copy. While one unit computes, the next one's gather is in flight
// (predicted from the direction of the last two requests: ascending in forward, descending in backward). A
// buffer is overwritten by the next gather once its unit is done, so the step holds at most two gathered units,
// never the model. The model asks for a unit through ParamSource (src/model/unit_io.hpp): use(a, b) before it
// reads, params(u) for where the unit lies. Every DP rank requests the same units in the same order (the same schedule), so the
// non-blocking all-gathers match.
//
// A unit is one or two contiguous ranges of the layout (the head of a last stage is wte at the start and ln_f
// at the end); each range meets every DP shard in a piece of its own length: one uneven all-gather per range.
// The gathered elements are the working copy's (fp32, or the 16-bit copy the optimizer rounded from each
// shard's fp32 master): the gather moves bytes and rounds nothing.
#include <map>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/unit_io.hpp"
#include "src/train/dp/shard_plan.hpp"
#include "src/train/train_state.hpp"
#include "src/train/dp/zero.hpp"
#include "src/comm/node_shm.hpp"

namespace gt {

class ZeroGather final : public ParamSource {
 public:
  // Adds the two gather buffers to the state, of the working type: Gather0 as large as the largest unit,
  // Gather1 as the second largest. Two units are never needed at once in the same buffer, so that is enough,
  // and the largest unit (the embedding: wte alone is 31% of gpt2-124m) is held once, not twice.
  // chunk_rows > 0: wte in row chunks (unit_spans), each a unit gathered on its own.
  ZeroGather(TrainState& state, const ZeroPlan& plan, Comm& dp, size_t chunk_rows = 0);
  ~ZeroGather() override;

  // ParamSource: the parameters of units a and b (b = -1: none) gathered when this returns; params(u) is where.
  void use(int a, int b) override;
  const void* params(int u) override;
  // The parameters changed (the optimizer step, a resume): drop every gathered copy. Every rank calls it at the
  // same points (on one node it publishes that this rank's shard is current: src/comm/node_shm.hpp).
  void invalidate();
  // From here on a gather copies each rank's piece straight out of its shard in the DP group's shared region
  // (src/comm/node_shm.hpp), where Params was moved; no MPI call. Before the first need().
  void attach(NodeShm* shm) { shm_ = shm; }
  // Elements of both gather buffers together (the largest unit plus the second largest: the ledger's figure).
  size_t buffer_elems() const { return shard_plan::gather_elems(slots_[0].cap, slots_[1].cap); }
  // Gathers issued so far (prefetched or not) and how many a request found already in flight or done.
  long gathers() const { return gathers_; }
  long prefetch_hits() const { return hits_; }

 private:
  struct Slot {
    unsigned char* data = nullptr;
    size_t cap = 0;  // elements
    int unit = -1;
    std::vector<RequestPtr> pending;  // the gather's requests until waited
  };
  void issue(Slot& s, int unit);
  void settle(Slot& s);     // waits its gather
  void copy_from_peers(int unit, unsigned char* at);  // (shm) the gather as memcpy
  Slot* holding(int unit);
  bool fits(const Slot& s, int unit) const { return units_.at(unit).elems <= s.cap; }
  Slot* other(Slot* s) { return s == &slots_[0] ? &slots_[1] : &slots_[0]; }
  void place_two(int a, int b);  // units a and b in buffers they fit, keeping what is already there if it can

  TrainState& state_;
  const ZeroPlan& plan_;
  Comm& dp_;
  DType dtype_;     // of the working copy
  size_t elem_;     // its bytes per element
  std::map<int, UnitSpan> units_;
  Slot slots_[2];
  int last_ = -1;        // the unit requested last
  bool descending_ = false;
  long gathers_ = 0, hits_ = 0;
  NodeShm* shm_ = nullptr;
};

}  // namespace gt
