#pragma once
// The in-memory move of a live rebalance (parallel.adapt = rebalance, docs/adaptive.md): what one trainer hands
// the trainer rebuilt on the new pipeline partition, with no disk round trip. The fp32 parameters and the AdamW
// moments in their global shapes (as a checkpoint holds them, so any partition, TP split or ZeRO shard selects its
// elements from them as a resume selects its hyperslabs), the progress counters and the extensions' meta entries,
// this invocation's step history and the adapter's own state. Simple rather than lean: Trainer::gather
// all-reduces every tensor over the world, so while one buffer is gathered every rank holds the whole model twice;
// each rank then keeps only the tensors its stage holds on the new partition (keep_only), so what is handed over
// (and held while the new trainer allocates) is three times the rank's new stage. Sending only the moving blocks
// point to point is the next step.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/core/config.hpp"
#include "src/train/checkpointer.hpp"
#include "src/train/adapt/layout_adapter.hpp"
#include "src/train/adapt/pipeline_adapter.hpp"
#include "src/train/report/step_stats.hpp"
#include "src/train/train_state.hpp"

namespace gt {

using GlobalTensors = std::vector<std::pair<std::string, std::vector<float>>>;  // name -> row-major global values

struct StateHandoff {
  GlobalTensors master, adam_m, adam_v;  // Trainer::gather of the master (master_id), AdamM, AdamV
  TrainProgress progress;
  CheckpointMeta extension_meta;  // the extensions' meta entries (save_meta, load_meta): the loss scaler's counters
  std::vector<StepStats> history;
  AdaptCarry adapt;
  LayoutCarry layout;  // parallel.adapt = full: the layout decider's memory and decisions (layout_adapter.hpp)
  bool relayout = false;  // handed to another layout (its time is the next switch's expected cost)
  double started = 0;  // MPI_Wtime when the old trainer began the handoff (the move's time is logged on adopt)
};

// Writes into the fp32 buffer `buffer` of `state` (over the extent it holds: all of the layout, or a ZeRO shard)
// each local element's value from the global tensors. Throws gt::Error when a tensor of the layout is missing or
// has another global size (the handoff came from another model).
void scatter_global(TrainState& state, Buffer buffer, const GlobalTensors& tensors, MirrorMode mode);

// The names of the tensors pipeline stage `stage` holds on `partition` (first block per stage) on TP rank tp_rank
// of tp_size (stage_chunks, stage_tensor_specs).
std::set<std::string> tensors_of_stage(const Config& cfg, int pp, int stage, const std::vector<int>& partition,
                                       int tp_rank, int tp_size);
// Drops every tensor not named in `names`.
void keep_only(GlobalTensors* tensors, const std::set<std::string>& names);

}  // namespace gt
