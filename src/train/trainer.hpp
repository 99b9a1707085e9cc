#pragma once
// The training driver: composes the grid, the model stage, the data source, the pipeline schedule, the DP
// gradient buckets, AdamW, metrics and checkpoints. One object per rank; run() is collective.
#include <cmath>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/data/data_source.hpp"
#include "src/data/prefetch.hpp"
#include "src/grid/grid.hpp"
#include "src/io/checkpoint.hpp"
#include "src/model/gpt.hpp"
#include "src/train/grad_buckets.hpp"
#include "src/train/lr_schedule.hpp"
#include "src/train/schedule.hpp"

namespace gt {

struct StepStats {
  double loss = 0, lr = 0, grad_norm = 0;
  double ms = 0, ms_max = 0;                          // this step: mean over ranks and slowest rank
  double fwd_ms = 0, bwd_ms = 0, opt_ms = 0, data_ms = 0;  // means over ranks
  double comm_tp_ms = 0, comm_pp_ms = 0, comm_dp_ms = 0, comm_other_ms = 0;  // exposed, means over ranks
  // Stragglers: a rank's compute time is its step time less the time it was blocked in communication. The
  // slowest-computing rank waits least: what it still waits is the cost of communication itself (transfer,
  // reduction), while the others' extra waiting is load imbalance (a slower core, a slower stage).
  double compute_ms = 0, compute_ms_max = 0;  // mean over ranks and slowest rank
  double val_loss = -1;
};

class Trainer {
 public:
  Trainer(const Config& cfg, Grid& grid, const std::string& config_text);
  ~Trainer();
  // Runs from the current step to train.steps; returns the process exit code (0 or kExitPreempted).
  int run();

  // Access for tests.
  GPT<float>& model() { return *model_; }
  const std::vector<StepStats>& history() const { return history_; }
  int step() const { return step_; }
  // All parameters gathered in global shapes on every rank (name -> row-major values), for comparisons.
  std::vector<std::pair<std::string, std::vector<float>>> gather_params();

 private:
  StepStats train_step();
  double validate();
  void forward_op(int m, bool with_grad, double* loss_sum);
  void backward_op(int m, bool last);
  void load_micro_batch_tokens(Split split, int64_t first_sample, int slot);
  int64_t train_first_sample(int64_t samples_done, int m) const;
  void request_train_micro_batches();
  double optimizer_step(double lr);
  void save(const std::string& reason);
  void try_resume();
  std::vector<TensorShard> checkpoint_shards();
  CheckpointMeta checkpoint_meta() const;
  void write_summary(const std::string& status);
  double learning_rate_at_step() const;
  void log_step(const StepStats& s);

  Config cfg_;
  Grid& grid_;
  std::string config_text_;
  StageLayout stage_;
  std::unique_ptr<GPT<float>> model_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<BatchPrefetcher> prefetch_;  // training reads run ahead by data.prefetch micro-batches
  int64_t req_samples_done_ = 0;               // the next prefetch request: step base and micro-batch
  int req_m_ = 0;
  std::deque<int64_t> req_first_;              // first sample of each outstanding request, oldest first
  std::unique_ptr<GradBuckets> buckets_;
  Schedule schedule_;
  std::vector<PipeOp> ops_;
  DeviceView<float> adam_m_, adam_v_;
  std::vector<int32_t> host_tokens_, host_inputs_, host_targets_;
  std::vector<DeviceView<float>> send_bufs_;
  std::vector<RequestPtr> sends_;
  size_t sends_used_ = 0;

  int step_ = 0;                // completed optimizer steps
  int64_t samples_done_ = 0;    // global samples consumed (sampler position)
  int64_t global_batch_ = 0;    // sequences per optimizer step
  std::string resumed_from_;
  std::string ckpt_dir_;
  int last_saved_step_ = -1;
  double peak_gflops_ = 0;
  double flops_per_token_ = 0;
  int64_t n_params_ = 0;
  std::vector<StepStats> history_;
  double val_loss_last_ = -1;
  double last_loss_ = NAN;     // loss of the last step before a resume (for the summary of a no-op run)
  double t_fwd_ = 0, t_bwd_ = 0;
  double comm_fwd_ = 0, comm_bwd_ = 0, t_data_ = 0;
};

}  // namespace gt
