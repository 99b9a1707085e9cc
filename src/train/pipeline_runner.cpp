#include "src/train/pipeline_runner.hpp"

#include "src/core/error.hpp"

namespace gt {

namespace {
double blocked(Comm* c) { return c ? c->stats().blocked_seconds : 0.0; }
// NCCL's sends block their stream until the peer receives; MPI's are isends the runner waits for at the step's end.
bool blocking_sends(Grid& grid) { return grid.shape().pp > 1 && grid.pp().backend() == "nccl"; }
}  // namespace

PipelineRunner::PipelineRunner(const Config& cfg, Grid& grid, StageModel& model, BatchLoader& loader,
                               std::vector<PipeOp> ops, int positions)
    : cfg_(cfg), grid_(grid), model_(model), loader_(loader), ops_(std::move(ops)),
      p2p_(pipeline_p2p(ops_, grid.shape().pp, grid.pp_rank(), model.chunks(), blocking_sends(grid))),
      last_backward_(ops_.size(), 0), positions_(positions) {
  mark_last_backwards();
}

void PipelineRunner::set_ops(std::vector<PipeOp> ops) {
  if (max_in_flight(ops) > model_.slots())
    throw Error("pipeline: internal: the new schedule keeps more micro-batches in flight than the model has slots");
  ops_ = std::move(ops);
  p2p_ = pipeline_p2p(ops_, grid_.shape().pp, grid_.pp_rank(), model_.chunks(), blocking_sends(grid_));
  last_backward_.assign(ops_.size(), 0);
  mark_last_backwards();
}

void PipelineRunner::mark_last_backwards() {
  // A chunk's gradients are complete after its last backward (interleaved: the later chunks finish first).
  std::vector<char> seen(size_t(model_.chunks()), 0);
  for (size_t i = ops_.size(); i-- > 0;) {
    const PipeOp& op = ops_[i];
    if (op.chunk < 0 || op.chunk >= model_.chunks()) throw Error("pipeline: internal: an op of a chunk the stage lacks");
    if (op.kind == PipeOp::Backward && !seen[size_t(op.chunk)]) last_backward_[i] = seen[size_t(op.chunk)] = 1;
  }
}

void PipelineRunner::defer_send(const void* data) {
  const size_t bytes = model_.activation_elems() * dtype_size(model_.activation_dtype());
  if (sends_used_ == send_bufs_.size()) send_bufs_.emplace_back("pp_send", bytes);
  DeviceView<unsigned char>& buf = send_bufs_[sends_used_];
  Kokkos::deep_copy(buf, DeviceView<unsigned char>(static_cast<unsigned char*>(const_cast<void*>(data)), bytes));
  deferred_.push_back(sends_used_++);
}

// A forward's input arrives in its chunk's slot; a backward's output gradient in its chunk's gradient buffer.
void* PipelineRunner::recv_buffer(const PipeOp& op) {
  StageModel& c = model_.chunk(op.chunk);
  return op.kind == PipeOp::Forward ? c.stage_input_data(op.micro_batch % c.slots()) : c.grad_buffer_data();
}

void PipelineRunner::exchange(const P2PGroup& g, const std::vector<PipeOp>& ops) {
  if (g.empty()) return;
  const size_t n = model_.activation_elems();
  const DType t = model_.activation_dtype();
  std::vector<P2POp> msgs;
  size_t next = 0;
  for (const P2PMsg& m : g) {
    if (m.send && next == deferred_.size()) throw Error("pipeline: internal: a send of the schedule was never written");
    void* buf = m.send ? send_bufs_[deferred_[next++]].data() : recv_buffer(ops.at(size_t(m.op)));
    msgs.push_back({m.send, buf, n, t, m.peer, m.tag});
  }
  if (next != deferred_.size()) throw Error("pipeline: internal: a written send is missing from the schedule");
  deferred_.clear();
  std::vector<RequestPtr> reqs = grid_.pp().exchange(msgs);
  for (size_t k = 0; k < msgs.size(); ++k) {
    if (msgs[k].send)
      sends_.push_back(std::move(reqs[k]));
    else
      reqs[k]->wait();
  }
}

void PipelineRunner::wait_sends() {
  for (auto& r : sends_) r->wait();
  sends_.clear();
  sends_used_ = 0;
}

void PipelineRunner::forward_op(const PipeOp& op, int64_t first_sample, Split split, bool with_grad,
                                const P2PGroup& before, const std::vector<PipeOp>& ops) {
  const double t0 = MPI_Wtime(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp());
  StageModel& chunk = model_.chunk(op.chunk);
  const StageLayout& stage = chunk.stage();  // the chunk's virtual stage
  const int slot = op.micro_batch % chunk.slots();
  exchange(before, ops);
  // Samples feed the embedding (first stage) and the loss (last stage); middle stages read nothing.
  if (stage.first() || stage.last()) {
    loader_.load(split, first_sample);
    chunk.set_samples(slot, loader_.rows());
  }
  // d(loss)/d(position loss) times the loss scale (a power of two: exact in float); the loss is the mean over the
  // global batch's positions (ModelFamily::positions_per_sample)
  const float scale = float(loss_scale_) / float(double(loader_.global_batch()) * positions_);
  chunk.forward(slot, with_grad, scale);
  if (!stage.last()) defer_send(chunk.stage_output_data(slot));
  t_fwd_ += MPI_Wtime() - t0;
  comm_fwd_ += blocked(&grid_.tp()) + blocked(&grid_.pp()) - c0;
}

void PipelineRunner::backward_op(const PipeOp& op, const std::function<void(int)>& on_unit, const P2PGroup& before) {
  const double t0 = MPI_Wtime(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp()) + blocked(&grid_.dp());
  StageModel& chunk = model_.chunk(op.chunk);
  exchange(before, ops_);
  chunk.backward(op.micro_batch % chunk.slots(), on_unit);
  if (!chunk.stage().first()) defer_send(chunk.grad_buffer_data());
  t_bwd_ += MPI_Wtime() - t0;
  comm_bwd_ += blocked(&grid_.tp()) + blocked(&grid_.pp()) + blocked(&grid_.dp()) - c0;
}

void PipelineRunner::train_step(int64_t samples_done, double loss_scale, double* loss_sum,
                                const std::function<void(int)>& on_unit) {
  t_fwd_ = t_bwd_ = comm_fwd_ = comm_bwd_ = 0;
  loss_scale_ = loss_scale;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const PipeOp& op = ops_[i];
    if (op.kind == PipeOp::Forward)
      forward_op(op, loader_.first_sample(samples_done, op.micro_batch), Split::Train, true, p2p_[i], ops_);
    else
      backward_op(op, last_backward_[i] ? on_unit : std::function<void(int)>(), p2p_[i]);
  }
  exchange(p2p_.back(), ops_);  // the sends of the last ops
  wait_sends();
  *loss_sum += model_.take_loss_sum();  // the step's one copy of the loss to the host
}

void PipelineRunner::validate(int batches, double* loss_sum, double* hits) {
  model_.take_hits();  // the training forwards' hits are not the evaluation's
  // Validation micro-batch j is micro-batch j % M of validation batch j / M, laid out like a training batch; with
  // several chunks in the interleaved schedule's forward order (every chunk of the stage, micro-batches in order
  // within each).
  const int M = loader_.micro_batches(), p = grid_.shape().pp, v = model_.chunks();
  std::vector<PipeOp> fwd;
  if (v == 1) {
    for (int j = 0; j < batches * M; ++j) fwd.push_back({PipeOp::Forward, j});
  } else {
    for (const PipeOp& op : pipeline_schedule(Schedule::Interleaved, p, grid_.pp_rank(), batches * M, v))
      if (op.kind == PipeOp::Forward) fwd.push_back(op);
  }
  const std::vector<P2PGroup> p2p = pipeline_p2p(fwd, p, grid_.pp_rank(), v, blocking_sends(grid_));
  for (size_t i = 0; i < fwd.size(); ++i) {
    const int j = fwd[i].micro_batch;
    forward_op(fwd[i], loader_.first_sample(int64_t(j / M) * loader_.global_batch(), j % M), Split::Val, false,
               p2p[i], fwd);
  }
  exchange(p2p.back(), fwd);
  wait_sends();
  *loss_sum += model_.take_loss_sum();
  *hits += model_.take_hits();
}

}  // namespace gt
