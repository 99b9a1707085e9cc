#pragma once
// The one object the Trainer talks to for data-parallel traffic. It owns the ZeRO plan and the mechanisms that
// move gradients and parameters over the DP group, and hides which of them a run uses:
//   GradBuckets      the bucketed reduction during the last backward (all-reduce, 16-bit wire, top-k, or
//                    ZeRO-2/3's bucketed reduce-scatter), grad_buckets.hpp
//   ZeroGradStaging  ZeRO-2/3 gradients staged unit by unit and reduce-scattered (one micro-batch, one stage)
//   ZeroGather       ZeRO-3's per-unit parameter gathers before use
//   NodeShm          the DP group's shared-memory region on one node (CPU builds, parallel.allreduce = shm)
//   allgather_params the parameter shards to every rank after a ZeRO-1/2 update
// The step's calls, in order: begin_step, unit_done per unit finished by the last backward (on_unit()),
// finish (all reductions done: the optimizer may read reduced_grads), after_update (when the step updated).
#include <functional>
#include <memory>
#include <string>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/model/stage_model.hpp"
#include "src/train/dp/grad_buckets.hpp"
#include "src/train/dp/topk_residuals.hpp"
#include "src/train/train_state.hpp"
#include "src/train/dp/zero.hpp"
#include "src/train/dp/zero_gather.hpp"
#include "src/train/dp/zero_grads.hpp"
#include "src/comm/node_shm.hpp"

namespace gt {

class DataParallel {
 public:
  // What is decided before the TrainState exists: the ZeRO plan, whether gradients are staged, and so the
  // extents the state is allocated with (as shards from the start: no full buffer exists even at start-up).
  struct Plan {
    ZeroPlan zero;
    bool staged_grads = false;
    StateExtents extents;
  };
  static Plan plan(const Config& cfg, int pp, int dp_rank, int dp, const TensorLayout& layout);

  // Shards the state, builds what the plan needs and points the model at it. Collective over dp (the shared
  // region, when one is made). tied_embed: the tied wte's two gradients are summed over an embedding group.
  DataParallel(const Config& cfg, Grid& grid, TrainState& state, StageModel& model, Plan plan, bool tied_embed);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  const ZeroPlan& zero() const { return plan_.zero; }
  // Start of a step: gradients zeroed (or the staging prepared), gathered parameters dropped, buckets reset.
  void begin_step(long step, double loss_scale);
  // A gradient element of this step (the overflow test hook poisons one).
  float* some_grad();
  // Called by the last backward for every unit it finished (empty without DP traffic during backward).
  std::function<void(int)> on_unit();
  // Every reduction of the step launched and waited. sum_tied_wte (null without an embedding group) sums the
  // tied wte's gradients; it runs before the DP reduction from ZeRO-2 on (the shards cut wte differently).
  void finish(const std::function<void()>& sum_tied_wte);
  // After the optimizer updated the shard: the parameters every rank reads are current again.
  void after_update();

  // The run's DP traffic of the last step (bytes on the wire; -1 bytes without buckets).
  bool has_buckets() const { return bool(buckets_); }
  GradBuckets::WireStats wire_stats() const;
  // Whether ZeRO's all-gathers, staged reduce-scatters and stage 3's gathers run through shared memory.
  bool in_shared_memory() const;
  // For the start line: the ZeRO plan and the path the DP collectives take.
  std::string describe() const;
  // The memory ledger this plan predicts for the state (zero.hpp's predicted_state_bytes).
  StateLedger predicted_ledger() const;
  // Top-k's error-feedback residuals (compress.method = topk), saved and resumed as an extension; else null.
  TrainExtension* residuals() { return residuals_.get(); }

 private:
  void build_shared_memory(const std::map<int, UnitSpan>& units);
  void attach_model(size_t chunk_rows);
  void build_buckets(bool tied_embed);
  std::unique_ptr<BucketReducer> make_reducer();
  TopkCompression topk_compression();

  const Config& cfg_;
  Comm& comm_;
  TrainState& state_;
  StageModel& model_;
  Plan plan_;
  std::unique_ptr<NodeShm> shm_;
  std::unique_ptr<ZeroGather> gather_;
  std::unique_ptr<ZeroGradStaging> staging_;
  std::unique_ptr<GradBuckets> buckets_;
  std::unique_ptr<TopkResiduals> residuals_;
};

}  // namespace gt
