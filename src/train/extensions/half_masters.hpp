#pragma once
// The fp32 masters of a 16-bit run (train.precision = bf16 | fp16, docs/precision.md) as a TrainExtension
// (extension.hpp): the optimizer updates the fp32 buffer Master, the model computes with the 16-bit working copy
// Params, and this extension rounds the working copy (to nearest even) from the masters after every update and
// after a resume, a rollback or a live move loaded them.
// It adds no buffer and no dataset: the TrainState allocates Master with the working copy (over the ZeRO extents
// from the start, both filled from the same pure init, train_state.hpp), and the Checkpointer saves it as every
// run's master group (master/<tensor>: the datasets an fp32 run saves from its parameters).
// Under ZeRO each rank rounds the shard of the masters it updated; after an update DataParallel::after_update
// gathers the rounded shards to every rank (stages 1, 2; stage 3 keeps its shard), after a load on_resume does.
#include "src/train/dp/zero.hpp"
#include "src/train/extensions/extension.hpp"

namespace gt {

class HalfMasters final : public TrainExtension {
 public:
  // Throws unless the state's working type is 16-bit (it then holds a Master).
  HalfMasters(TrainState& state, const ZeroPlan& zero, Comm& dp);

  std::vector<Buffer> buffers() const override { return {}; }
  std::vector<TensorShard> datasets(ExtensionIo&) override { return {}; }
  // This rank's shard of the working copy rounded from its updated masters (before the step's DP gather).
  void after_update(int updates) override;
  // The working copy rounded from the loaded masters and gathered to every rank. Collective over dp.
  void on_resume() override;

 private:
  TrainState& state_;
  ZeroPlan zero_;  // shard: the masters this rank updates (all of the layout at stage 0)
  Comm& dp_;
};

}  // namespace gt
