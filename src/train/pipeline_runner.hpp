#pragma once
// Runs one stage's part of the pipeline schedule: the forward and backward ops of each micro-batch, the
// activations and their gradients between stages (tags 2m forward, 2m+1 backward; each send deferred into one
// group with the stage's next receive, as pipeline_p2p in schedule.hpp lays out, so that NCCL's blocking sends
// cannot wait on each other; sends from a pool of buffers that stay alive until the step's sends complete), and
// the per-step compute and communication timers. The DP gradient buckets are launched from the last backward op.
#include <functional>
#include <vector>

#include "src/grid/grid.hpp"
#include "src/model/gpt.hpp"
#include "src/train/batch_loader.hpp"
#include "src/train/schedule.hpp"

namespace gt {

class PipelineRunner {
 public:
  PipelineRunner(const Config& cfg, Grid& grid, StageModel& model, BatchLoader& loader, std::vector<PipeOp> ops);

  // Every op of one training step (micro-batches of the step that starts at samples_done); the step's token
  // losses are added to *loss_sum on the last stage (one device-to-host copy per step). on_unit(u) is called as
  // backward completes the gradients of unit u in the step's last backward op (the DP buckets' hook); may be empty.
  // loss_scale multiplies the loss before backward (1 without loss scaling).
  void train_step(int64_t samples_done, double loss_scale, double* loss_sum, const std::function<void(int)>& on_unit);
  // Forward only over `batches` global validation batches (the same sequences for every layout).
  void validate(int batches, double* loss_sum);

  // Time of the last train_step, seconds: forward and backward ops (communication and data waits included),
  // the communication they were blocked in, and the data wait.
  double fwd_s() const { return t_fwd_; }
  double bwd_s() const { return t_bwd_; }
  double comm_fwd_s() const { return comm_fwd_; }
  double comm_bwd_s() const { return comm_bwd_; }

 private:
  void forward_op(int m, int64_t first_sample, Split split, bool with_grad, const P2PGroup& before);
  double loss_scale_ = 1;
  void backward_op(int m, const std::function<void(int)>& on_unit, const P2PGroup& before);
  // Activations and their gradients travel in the model's storage type. defer_send copies `data` into a send
  // buffer; exchange issues group g: the deferred sends in order and the receive into recv_into, which is complete
  // on return.
  void defer_send(const void* data);
  void exchange(const P2PGroup& g, void* recv_into);
  void wait_sends();

  const Config& cfg_;
  Grid& grid_;
  StageModel& model_;
  BatchLoader& loader_;
  std::vector<PipeOp> ops_;
  std::vector<P2PGroup> p2p_;  // pipeline_p2p(ops_): the group issued before each op, and the last one after
  std::vector<DeviceView<unsigned char>> send_bufs_;
  std::vector<size_t> deferred_;  // send buffers written but not yet issued, in send order
  std::vector<RequestPtr> sends_;
  size_t sends_used_ = 0;
  double t_fwd_ = 0, t_bwd_ = 0, comm_fwd_ = 0, comm_bwd_ = 0;
};

}  // namespace gt
