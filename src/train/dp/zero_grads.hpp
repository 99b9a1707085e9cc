#pragma once
// ZeRO-2/3 without the full gradient buffer. The backward writes each unit's gradients (UnitSpan: embedding,
// blocks, head) into a unit-sized fp32 staging buffer; as soon as the unit's backward ends, the buffer is
// reduce-scattered over the DP group into this rank's shard (GradsShard), while the next unit's backward
// fills the other of two rotating buffers (the non-blocking reduce-scatter overlaps it, as the gathers of
// zero_gather.hpp overlap compute). So a rank holds its gradient shard plus at most two units' gradients, not
// 4 psi bytes of accumulation buffer.
//
// The model asks for a unit's buffer through GradSink (src/model/unit_io.hpp) before it writes the unit's
// gradients; a unit not staged at that moment throws.
//
// The unit holding wte keeps a buffer of its own for the whole step: with tied weights the head's forward
// writes wte's gradient long before the embedding's backward adds to it.
//
// The rule for what runs this path (applies()): one micro-batch per step and one pipeline stage. With several
// micro-batches each unit's gradient would have to be reduced after every micro-batch and added into the
// shard (DeepSpeed's ZeRO-2 rule: M reduce-scatters per step instead of one), and across pipeline stages the
// tied wte is summed over the embedding group before its reduction; those runs keep the full buffer Grads
// (docs/zero.md).
#include <map>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/unit_io.hpp"
#include "src/train/dp/shard_plan.hpp"
#include "src/train/train_state.hpp"
#include "src/train/dp/zero.hpp"
#include "src/comm/node_shm.hpp"

namespace gt {

class ZeroGradStaging final : public GradSink {
 public:
  // Whether a run stages its gradients (the rule above) instead of keeping the full buffer.
  static bool applies(const ZeroPlan& plan, int micro_batches, int pp);
  // Adds GradsTied (the unit holding wte) and GradsStage0, GradsStage1 (the largest other unit) to
  // the state, and removes a full Grads buffer if there is one: from here on the model's gradients go to the
  // staging (the model is bound to no gradient buffer and given this as its GradSink).
  // chunk_rows > 0: wte in row chunks (unit_spans), each staged like a block: no buffer of wte's size.
  ZeroGradStaging(TrainState& state, const ZeroPlan& plan, size_t chunk_rows = 0);
  ~ZeroGradStaging() override;
  ZeroGradStaging(const ZeroGradStaging&) = delete;
  ZeroGradStaging& operator=(const ZeroGradStaging&) = delete;

  // The staging buffers (NodeShm moves them into the DP group's shared region).
  static std::vector<Buffer> buffers() { return {Buffer::GradsTied, Buffer::GradsStage0, Buffer::GradsStage1}; }
  // From here on the reduce-scatters run through shared memory (src/comm/node_shm.hpp), not MPI: the staging buffers
  // were moved into the region (their pointers are read again). Before the first step.
  void attach(NodeShm* shm);

  // compress.method = bf16 | fp16 or parallel.grad_reduce_dtype = bf16 (DataParallel's 16-bit reduce-scatter):
  // each staged unit is rounded to `t` and reduce-scattered in `t` (MPI: into a 16-bit shard GradWireShard,
  // widened into grads_shard by finish(); shm: every rank's values rounded to `t` as they are read and summed in
  // rank order with one rounding per addition, the MPI 16-bit sum's arithmetic). Before the first step.
  void set_wire(DType t);

  // Start of a step: the wte unit and the first unit of backward (the highest) zeroed and writable, nothing
  // else.
  void begin_step();
  // The backward finished unit u (units complete from the highest down): its reduce-scatter starts and the
  // next unit down gets the other rotating buffer, zeroed, once that buffer's reduce-scatter is done.
  void unit_done(int unit, Comm& dp);
  // Waits every reduce-scatter: grads_shard holds the step's reduced gradient.
  void finish();
  // Elements of all staging buffers together (the ledger's figure).
  size_t elems() const { return shard_plan::staging_elems(slots_[0].cap, tied_.cap); }
  // A gradient element of this step (the overflow test hook poisons one).
  float* some_grad() { return tied_.cap > 0 ? tied_.data : slots_[0].data; }
  // GradSink: the staged buffer of unit u; throws if u is not staged now.
  float* grads(int unit) override;

 private:
  struct Slot {
    Buffer id = Buffer::GradsTied, wire_id = Buffer::GradWireTied;  // its staging buffer and its 16-bit copy
    float* data = nullptr;
    size_t cap = 0;  // elements
    int unit = -1;
    uint64_t step = 0;                // (shm) the step its unit was staged in
    std::vector<RequestPtr> pending;  // (MPI) its reduce-scatter until waited
    uint16_t* wire = nullptr;         // (16-bit wire, MPI) the unit rounded to wire_
  };
  void launch(int unit, Slot& s, Comm& dp);  // (MPI) the unit's reduce-scatter
  void prepare(Slot& s, int unit);
  // Until nobody reads the slot any more: its reduce-scatter waited (MPI), or every rank has summed its piece
  // of the slot's unit (shm).
  void wait(Slot& s);
  // (shm) Sums this rank's piece of every unit staged here that every rank has staged.
  void reduce_ready();
  void reduce(int unit, const Slot& s);
  void sum_rounded(const std::vector<const float*>& in, size_t at, size_t len, float* o) const;

  TrainState& state_;
  const ZeroPlan& plan_;
  std::map<int, UnitSpan> units_;
  int tied_unit_ = -1;  // the unit holding wte
  Slot tied_;
  Slot slots_[2];
  int turn_ = 0;  // the rotating buffer the next unit takes
  NodeShm* shm_ = nullptr;
  DType wire_ = DType::F32;        // the reduce-scatter's type
  uint16_t* wire_shard_ = nullptr;  // (16-bit wire, MPI) this rank's shard of the 16-bit sums
  uint64_t step_ = 0;                             // (shm) steps begun: the flags' values
  std::vector<std::pair<int, Slot*>> to_reduce_;  // (shm) units staged here whose piece is not summed yet
};

}  // namespace gt
