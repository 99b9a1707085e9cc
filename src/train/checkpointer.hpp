#pragma once
// The run's checkpoints: the TrainState's fp32 parameters and AdamW moments as shards of global-shape
// tensors (one writer per global element; under ZeRO each DP rank writes and reads its own shard's part of
// every tensor, so no rank ever holds a full copy of sharded state), the metadata that makes a resume exact (step, sampler position,
// seed, layout, config), saving and resuming.
#include <cmath>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/io/checkpoint.hpp"
#include "src/train/extensions/extension.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/train_state.hpp"
#include "src/train/dp/zero.hpp"

namespace gt {

// Where the run stands: what a checkpoint records and a resume restores.
struct TrainProgress {
  int step = 0;               // completed optimizer steps
  int64_t samples_done = 0;   // global samples consumed (sampler position)
  double loss = NAN;          // loss of the last completed step
  double lr = 0;              // its learning rate (LrSchedule's; recorded in checkpoints as meta "lr")
  int skipped = 0;            // steps skipped on overflow (no update): optimizer updates = step - skipped
};  // the features' own state (the loss scaler's counters, ...) goes through their extensions (extension.hpp)

class Checkpointer {
 public:
  Checkpointer(const Config& cfg, Grid& grid, const std::string& config_text, TrainState& state,
               std::string data_description, int64_t global_batch, const ZeroPlan& zero,
               MirrorMode mirror = MirrorMode::Auto, std::vector<TrainExtension*> extensions = {});

  const std::string& dir() const { return dir_; }
  int last_saved_step() const { return last_saved_step_; }
  const std::string& resumed_from() const { return resumed_from_; }

  // Collective: writes the checkpoint of `p` and prints its path (world rank 0).
  void save(const TrainProgress& p, const std::string& reason);
  // Collective: per checkpoint.resume ("none", "auto" or a path) restores the state and returns true, or
  // returns false for a fresh start.
  bool resume(TrainProgress* p);
  // Collective: the bad-step policy's rollback (src/train/step_guard.hpp): reloads the newest valid checkpoint
  // of this run's directory; p keeps its samples_done, so the data go on past the bad step instead of replaying
  // the batches that led to it. Returns the step rolled back to; throws gt::Error when there is no checkpoint.
  int rollback(TrainProgress* p);

 private:
  // The fp32 parameters and moments as the host sees them (HDF5 and the checksums read host memory): host
  // mirrors of the state's device buffers (of the shard a sharded buffer holds).
  struct HostState;
  std::vector<TensorShard> shards(HostState& h);
  ExtensionIo extension_io(HostState& h);
  CheckpointMeta meta(const TrainProgress& p) const;
  CheckpointMeta load(const std::string& path, HostState& h, std::vector<TensorShard>& s,
                      const CheckpointRequirements& req, TrainProgress* p);

  const Config& cfg_;
  Grid& grid_;
  const std::string& config_text_;
  TrainState& state_;
  const ZeroPlan& zero_;  // sharded: each DP rank saves and loads its shard
  MirrorMode mirror_;
  std::vector<TrainExtension*> extensions_;  // their buffers and datasets are saved and loaded with the state
  std::string data_description_;
  int64_t global_batch_;
  std::string dir_;
  int last_saved_step_ = -1;
  std::string resumed_from_;
};

}  // namespace gt
