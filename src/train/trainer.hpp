#pragma once
// The training driver of one rank: builds the pieces and runs the step. run() is collective.
//   TrainState      the flat buffers (parameters, gradients, AdamW moments) over one tensor layout
//   GPT             the model stage, computing on the TrainState's buffers
//   BatchLoader     the tokens of each micro-batch (sampler position, prefetch)
//   PipelineRunner  the schedule's forward/backward ops and the traffic between stages
//   DataParallel    the DP traffic: gradient reductions overlapped with the last backward, ZeRO's shards,
//                   gathers and staging (src/train/dp/data_parallel.hpp)
//   Optimizer       global norm, clipping, AdamW (over this rank's ZeRO shard: zero.hpp)
//   Sparsity        2:4 masks and the masked working copy of the weights (sparsity.hpp; when configured)
//   HalfMasters     the 16-bit working copy rounded from the fp32 masters (half_masters.hpp; bf16, fp16)
//   LossScaler      the dynamic loss scale and the skip decision on overflow
// The features with state of their own are TrainExtensions (extension.hpp), which the step, the Checkpointer,
// the live move and the RunReport iterate.
//   StepGuard       bad steps (non-finite, beyond a bound, spikes): stop, skip or roll back
//   Checkpointer    save and resume
//   RunReport       the per-step line, metrics.jsonl and summary.json
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/model/gpt.hpp"
#include "src/train/batch_loader.hpp"
#include "src/train/checkpointer.hpp"
#include "src/train/dp/data_parallel.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/extensions/loss_scaler.hpp"
#include "src/train/optim/lr_schedule.hpp"
#include "src/train/extensions/model_buffers.hpp"
#include "src/model/model_family.hpp"
#include "src/train/optim/optimizer.hpp"
#include "src/train/adapt/pipeline_adapter.hpp"
#include "src/train/adapt/layout_adapter.hpp"
#include "src/train/adapt/dp_share_adapter.hpp"
#include "src/train/extensions/half_masters.hpp"
#include "src/train/pipeline_runner.hpp"
#include "src/train/adapt/rebalancer.hpp"
#include "src/train/report/run_report.hpp"
#include "src/train/extensions/sparsity.hpp"
#include "src/train/step_guard.hpp"
#include "src/train/adapt/state_handoff.hpp"
#include "src/train/report/step_stats.hpp"
#include "src/train/adapt/straggler_monitor.hpp"
#include "src/train/train_state.hpp"

namespace gt {

// An evaluation's figures: the mean loss per position, and a classifier's top-1 accuracy (-1: not a classifier).
struct ValResult {
  double loss = 0, top1 = -1;
};

class Trainer {
 public:
  Trainer(const Config& cfg, Grid& grid, const std::string& config_text);
  ~Trainer();
  // Runs from the current step to train.steps; returns the process exit code (0 or kExitPreempted).
  int run();

  // Set when run() returned to continue on a new pipeline partition (parallel.rebalance = auto): the new
  // parallel.stage_blocks, and what was measured and predicted (for the next trainer's log).
  const std::string& repartition() const { return repartition_; }
  const std::string& rebalance_report() const { return rebalancer_->report(); }
  // parallel.adapt = rebalance: after run() returned with a repartition(), the state to continue from in memory
  // (null when the repartition went through a checkpoint: parallel.rebalance = auto). Collective adopt(): a
  // trainer built on the new partition takes the state over instead of a resume (state_handoff.hpp).
  std::unique_ptr<StateHandoff> take_handoff() { return std::move(handoff_); }
  // Set when run() returned to continue on another (tp, pp, dp) (layout_adapter.hpp), with take_handoff().
  const std::optional<LayoutChoice>& relayout() const { return relayout_; }
  void adopt(StateHandoff h);

  // Access for tests.
  StageModel& model() { return *model_; }
  TrainState& state() { return *state_; }
  const std::vector<StepStats>& history() const { return history_; }
  int step() const { return progress_.step; }
  const TrainProgress& progress() const { return progress_; }
  double loss_scale() const { return scaler_->scale(); }
  // Like gather_params for any fp32 TrainState buffer (Master: the master_id, AdamM, AdamV, ...; a ZeRO-sharded
  // master or moments through the staging copies: collective over the world).
  std::vector<std::pair<std::string, std::vector<float>>> gather(Buffer buffer);
  // Tests: called on every rank after each step (with the step number), before any checkpoint of that step.
  std::function<void(int)> after_step;
  // All parameters gathered in global shapes on every rank (name -> row-major values), for comparisons.
  // Whether ZeRO's all-gathers (stages 1, 2), staged reduce-scatters and stage 3's gathers run through the DP
  // group's shared memory (src/comm/node_shm.hpp) instead of MPI.
  bool zero_in_shared_memory() const { return dp_->in_shared_memory(); }
  std::vector<std::pair<std::string, std::vector<float>>> gather_params();

 private:
  StepStats train_step();
  std::unique_ptr<DataSource> make_schedule(const ConfigChoices& choice);  // the constructor's parts
  void make_extensions(const ConfigChoices& choice, const ZeroPlan& zero);
  std::vector<PipeOp> pipeline_ops(PipelineSchedule schedule, int micro_batches) const;
  void apply_dp_shares(const std::vector<int>& shares);
  void make_adaptation(AdaptMode mode, const std::vector<int>& partition);
  std::string adapt_decisions_json() const;
  struct AdaptOutcome {
    bool move = false;                      // blocks move (parallel.adapt = rebalance or full, pp > 1)
    std::optional<LayoutChoice> relayout;  // another layout (full, or the test hook)
  };
  AdaptOutcome adapt_after(int step);
  void hand_off_relayout(const LayoutChoice& to);
  struct CommMarks {
    double tp = 0, pp = 0, dp = 0, other = 0;  // seconds blocked so far (other: the model-parallel and embedding groups)
  };
  CommMarks comm_marks();
  StepTimes step_times(double t0, double t_opt0, double t_end, const CommMarks& start);
  // The group of the first and last pipeline stages that sums the tied wte's two gradients; null when this rank
  // is in neither, and for model.arch = llama, whose head is not tied to the embedding.
  Comm* tied_embed() { return cfg_.model.llama() ? nullptr : grid_.embed(); }
  size_t activation_bytes() const;  // this rank's activation ledger (stored activations + work buffers)
  void print_memory_line() const;   // the start line of rank 0: the DP plan, model state and activations
  ValResult validate();
  void save(const std::string& reason);
  void finish(const std::string& status);

  Config cfg_;
  Grid& grid_;
  std::string config_text_;
  StageLayout stage_;
  std::unique_ptr<ModelFamily> family_;  // model.kind: the model seam (src/model/model_family.hpp)
  std::unique_ptr<TrainState> state_;
  std::unique_ptr<StageModel> model_;
  std::unique_ptr<DataParallel> dp_;  // after model_: the model's hooks point into it
  std::unique_ptr<BatchLoader> loader_;
  std::unique_ptr<PipelineRunner> pipeline_;
  std::unique_ptr<Sparsity> sparsity_;
  std::unique_ptr<HalfMasters> half_masters_;  // bf16, fp16: the working copy rounded from the fp32 masters
  std::unique_ptr<ModelBuffers> model_buffers_;  // the model's non-parameter state (BatchNorm), when it has any
  // The features with state of their own (half_masters_, sparsity_, the DP path's top-k residuals, model_buffers_,
  // dp_adapter_, scaler_): the step, the Checkpointer, the live move and the RunReport iterate them
  // (extension.hpp). Not owned.
  std::vector<TrainExtension*> extensions_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<LrSchedule> lr_;  // every step's rate (warm-up, decay, train.lr_scaling; epochs resolved)
  std::unique_ptr<StepGuard> guard_;  // the bad-step policy (train.nonfinite)
  // How the host reads device state (checkpoints, gathers); Copy only under the test hook test_hooks::host_mirror_copy().
  MirrorMode mirror_mode_ = host_mirror_mode_from_env();
  StateLedger predicted_ledger() const;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<RunReport> report_;
  TrainProgress progress_;
  std::vector<StepStats> history_;  // the steps of this invocation
  std::unique_ptr<Rebalancer> rebalancer_;
  std::unique_ptr<StragglerMonitor> straggler_;  // parallel.adapt = monitor | rebalance
  std::unique_ptr<PipelineAdapter> adapter_;     // parallel.adapt = rebalance, pp > 1
  std::unique_ptr<DpShareAdapter> dp_adapter_;   // parallel.adapt = rebalance, pp = 1
  std::unique_ptr<StateHandoff> handoff_;        // set by a live move, for the next trainer
  std::unique_ptr<LayoutAdapter> layout_adapter_;  // a live re-layout: parallel.adapt = full (or its test hook)
  std::optional<LayoutChoice> relayout_;
  std::vector<int> partition_;                   // first block of every stage
  // Collective: this trainer's state in global shapes, the tensors this rank holds on `partition`.
  std::unique_ptr<StateHandoff> hand_off(const std::vector<int>& partition);
  std::string repartition_;
};

}  // namespace gt
