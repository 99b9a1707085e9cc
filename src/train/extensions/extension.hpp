#pragma once
// A feature that carries state of its own through training (issue 20, Debt 3): the buffers it adds to the
// TrainState, the checkpoint datasets and meta entries it owns, its hooks around the update and after a resume,
// and its fields of summary.json. The Trainer keeps a list of them; the step loop, the Checkpointer, the live
// move's handoff and the RunReport iterate it, instead of naming each feature's buffers, datasets and figures.
// Implemented by the 2:4 sparsity masks (sparsity.hpp), top-k's error-feedback residuals (dp/topk_residuals.hpp),
// the model's buffers (model_buffers.hpp), the adapted DP shares (dp_share_adapter.hpp), the dynamic loss
// scaler's counters (loss_scaler.hpp) and the 16-bit working copy of the fp32 masters (half_masters.hpp).
#include <functional>
#include <vector>

#include "src/core/json.hpp"
#include "src/grid/grid.hpp"
#include "src/io/checkpoint.hpp"
#include "src/train/train_state.hpp"

namespace gt {

// What the Checkpointer lends an extension while it saves or loads.
struct ExtensionIo {
  Grid& grid;
  TrainState& state;
  std::function<float*(Buffer)> host;  // the host copy (the Checkpointer's mirror) of one of its buffers
};

class TrainExtension {
 public:
  virtual ~TrainExtension() = default;
  // The fp32 TrainState buffers it added, which its checkpoint datasets point into (through ExtensionIo::host).
  virtual std::vector<Buffer> buffers() const = 0;
  // The checkpoint datasets it owns, in host memory (io.host). Collective over the world when it says so.
  virtual std::vector<TensorShard> datasets(ExtensionIo& io) = 0;
  // Meta entries saved with its datasets (and carried by a live move's handoff: state_handoff.hpp).
  virtual void save_meta(CheckpointMeta&) const {}
  // After its datasets were read from a checkpoint written with `meta` (or a live move's handoff was adopted): its
  // state from the meta entries save_meta wrote. Not collective.
  virtual void load_meta(const CheckpointMeta&) {}
  // Whether its state is read from a checkpoint written with `meta` (false: its state starts afresh here, and
  // it says why). Called on every rank alike before the read.
  virtual bool restores_from(ExtensionIo&, const CheckpointMeta&) { return true; }
  // After the read, the host copies pushed to the device (replicated key/value rows, ...). Collective.
  virtual void after_load(ExtensionIo&) {}
  // Before the optimizer update number updates_done + 1, on the stored gradients (scaled by loss_scale).
  virtual void before_update(int /*updates_done*/, double /*loss_scale*/) {}
  // After update number `updates` (1-based).
  virtual void after_update(int /*updates*/) {}
  // After a resume or a rollback loaded the state: what follows from it.
  virtual void on_resume() {}
  // Before an evaluation (data.val_every): what must agree over the ranks first. Collective.
  virtual void before_validation() {}
  // Its fields of summary.json, at the end of the run. World rank 0 only: not collective.
  virtual void report(JsonObject& /*summary*/) const {}
};

// The hyperslab of tensor s a rank reads and writes in a checkpoint: its local slice, less the key/value rows of a
// replicated key/value head on every replica but the last (src/train/kv_replicas.hpp). Defined in checkpointer.cpp.
std::vector<int64_t> checkpoint_count(const TensorSpec& s);

}  // namespace gt
