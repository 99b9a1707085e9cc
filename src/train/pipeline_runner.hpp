#pragma once
// Runs one stage's part of the pipeline schedule: the forward and backward ops of each micro-batch, the
// activations and their gradients between stages (tags 2m forward, 2m+1 backward; each send deferred into one
// group with the stage's next receive, as pipeline_p2p in schedule.hpp lays out, so that NCCL's blocking sends
// cannot wait on each other; sends from a pool of buffers that stay alive until the step's sends complete), and
// the per-step compute and communication timers. The DP gradient buckets are launched from the last backward op of
// each model chunk. A stage of several chunks (interleaved schedule, src/train/stage_chunks.hpp) runs each op on the
// op's chunk: its activations, its receive buffer, its data (the embedding's chunk and the head's read tokens).
#include <functional>
#include <vector>

#include "src/grid/grid.hpp"
#include "src/model/gpt.hpp"
#include "src/train/batch_loader.hpp"
#include "src/train/schedule.hpp"

namespace gt {

class PipelineRunner {
 public:
  // positions: loss terms per sample (ModelFamily::positions_per_sample); the loss is their global-batch mean.
  PipelineRunner(const Config& cfg, Grid& grid, StageModel& model, BatchLoader& loader, std::vector<PipeOp> ops,
                 int positions);

  // Every op of one training step (micro-batches of the step that starts at samples_done); the step's token
  // losses are added to *loss_sum on the last stage (one device-to-host copy per step). on_unit(u) is called as
  // backward completes the gradients of unit u in the step's last backward op (the DP buckets' hook); may be empty.
  // loss_scale multiplies the loss before backward (1 without loss scaling).
  void train_step(int64_t samples_done, double loss_scale, double* loss_sum, const std::function<void(int)>& on_unit);
  // Forward only over `batches` global validation batches (the same sequences for every layout); a classifier's
  // top-1 hits are added to *hits.
  void validate(int batches, double* loss_sum, double* hits);
  // Between steps: the schedule of another micro-batch count (parallel.adapt = rebalance changing this replica's
  // data-parallel share, dp_share_adapter.hpp). The model's activation slots must hold max_in_flight(ops).
  void set_ops(std::vector<PipeOp> ops);

  // Time of the last train_step, seconds: forward and backward ops (communication and data waits included),
  // the communication they were blocked in, and the data wait.
  double fwd_s() const { return t_fwd_; }
  double bwd_s() const { return t_bwd_; }
  double comm_fwd_s() const { return comm_fwd_; }
  double comm_bwd_s() const { return comm_bwd_; }

 private:
  void forward_op(const PipeOp& op, int64_t first_sample, Split split, bool with_grad, const P2PGroup& before,
                  const std::vector<PipeOp>& ops);
  void backward_op(const PipeOp& op, const std::function<void(int)>& on_unit, const P2PGroup& before);
  // Activations and their gradients travel in the model's storage type. defer_send copies `data` into a send
  // buffer; exchange issues group g: the deferred sends in order and each receive into the buffer of the op of
  // `ops` it feeds (recv_buffer), complete on return.
  void defer_send(const void* data);
  void exchange(const P2PGroup& g, const std::vector<PipeOp>& ops);
  void* recv_buffer(const PipeOp& op);
  void wait_sends();
  void mark_last_backwards();

  const Config& cfg_;
  Grid& grid_;
  StageModel& model_;
  BatchLoader& loader_;
  std::vector<PipeOp> ops_;
  std::vector<P2PGroup> p2p_;  // pipeline_p2p(ops_): the group issued before each op, and the last one after
  std::vector<char> last_backward_;  // per op: the last backward of its chunk in the step (the DP buckets' hook)
  double loss_scale_ = 1;            // the step's, for forward_op
  int positions_ = 1;                // loss positions per sample (the loss is their mean over the global batch)
  std::vector<DeviceView<unsigned char>> send_bufs_;
  std::vector<size_t> deferred_;  // send buffers written but not yet issued, in send order
  std::vector<RequestPtr> sends_;
  size_t sends_used_ = 0;
  double t_fwd_ = 0, t_bwd_ = 0, comm_fwd_ = 0, comm_bwd_ = 0;
};

}  // namespace gt
