#pragma once
// parallel.adapt = rebalance at pp = 1 (issue 25, docs/adaptive.md): the trainer's seam for data-parallel shares
// re-derived from measured speed. After each step the trainer hands it the straggler monitor's all-gathered
// per-rank compute times (the same array on every rank); the DpShareDecider (dp/dp_share_adapt.hpp, pure) says
// whether to change the shares; the change is agreed by a broadcast from world rank 0 (every rank computed the same;
// the broadcast makes it explicit, so no rank continues on other shares). Each evaluation is logged like the
// pipeline adapter's: a line on rank 0, "adapt" in that step's metrics.jsonl line, the list in summary.json.
// Applying the shares (BatchLoader, the schedule) is the trainer's, at the step boundary right after.
// Checkpoints: as a TrainExtension (extension.hpp) it saves the shares in force as the root attribute
// adapt.dp_shares, and a resume under the same mode on the same DP size starts from them instead of
// parallel.dp_shares (take_resumed); on another DP size, or another global batch, they are ignored with a note.
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/train/dp/dp_share_adapt.hpp"
#include "src/train/extensions/extension.hpp"
#include "src/train/report/step_stats.hpp"

namespace gt {

// Throws gt::Error (one line, the same on every rank) when adaptive DP shares cannot run: dp = 1, or what static
// uneven shares cannot run with either (ZeRO 2/3, top-k compression), or the GPipe schedule (it keeps every
// micro-batch's activations, and the slots are allocated for the starting count).
void check_adapt_dp_shares(const Config& cfg, const GridShape& g);

class DpShareAdapter : public TrainExtension {
 public:
  // Collective over the world (gathers every rank's DP replica).
  DpShareAdapter(const Config& cfg, Grid& grid);
  // Collective over the world, after step `step`: true when the run continues on shares() from the next step.
  // Writes the evaluation into s->adapt_json (empty when none ran).
  bool after_step(int step, const std::vector<double>& compute_ms, StepStats* s);
  const std::vector<int>& shares() const { return shares_; }
  std::string decisions_json() const;  // "[{...}, ...]"
  const std::vector<std::string>& decisions() const { return decisions_; }  // the same, one object each
  // Why the replicas are known to differ in speed: the shares in force are uneven (adapted, or configured so);
  // "" when even. Under parallel.adapt = full the layout guard holds a switch on it (layout_guard.hpp).
  std::string uneven_reason() const;

  // TrainExtension: no buffers, no datasets; the shares as a meta entry.
  std::vector<Buffer> buffers() const override { return {}; }
  std::vector<TensorShard> datasets(ExtensionIo&) override { return {}; }
  void save_meta(CheckpointMeta& meta) const override;
  bool restores_from(ExtensionIo&, const CheckpointMeta& meta) override;
  // Once, after the trainer's resume: true when the run continues on the checkpoint's shares (shares() from
  // here; the trainer applies them). Prints the resume line or the note (rank 0).
  bool take_resumed();

 private:
  Grid& grid_;
  dp::DpShareSettings settings_;
  std::vector<int> replica_of_rank_;
  dp::DpShareDecider decider_;
  std::vector<int> shares_;
  std::vector<std::string> decisions_;
  std::vector<int> resumed_;  // the checkpoint's shares, adopted (empty: none)
  std::string resume_note_;   // why the checkpoint's shares were not adopted ("" when nothing to say)
};

}  // namespace gt
