#include "src/train/pipeline_runner.hpp"

#include "src/core/error.hpp"

namespace gt {

namespace {
double blocked(Comm* c) { return c ? c->stats().blocked_seconds : 0.0; }
}  // namespace

PipelineRunner::PipelineRunner(const Config& cfg, Grid& grid, StageModel& model, BatchLoader& loader,
                               std::vector<PipeOp> ops)
    : cfg_(cfg), grid_(grid), model_(model), loader_(loader), ops_(std::move(ops)),
      p2p_(pipeline_p2p(ops_, grid.shape().pp, grid.pp_rank())) {
  // One model chunk per stage: the interleaved schedule's op lists are planned and simulated (schedule.hpp), not
  // run yet (that needs a StageModel per chunk).
  for (const PipeOp& op : ops_)
    if (op.chunk != 0) throw Error("pipeline: the runner runs one model chunk per stage; interleaved op lists are not run yet");
}

void PipelineRunner::defer_send(const void* data) {
  const size_t bytes = model_.activation_elems() * dtype_size(model_.activation_dtype());
  if (sends_used_ == send_bufs_.size()) send_bufs_.emplace_back("pp_send", bytes);
  DeviceView<unsigned char>& buf = send_bufs_[sends_used_];
  Kokkos::deep_copy(buf, DeviceView<unsigned char>(static_cast<unsigned char*>(const_cast<void*>(data)), bytes));
  deferred_.push_back(sends_used_++);
}

void PipelineRunner::exchange(const P2PGroup& g, void* recv_into) {
  if (g.empty()) return;
  const size_t n = model_.activation_elems();
  const DType t = model_.activation_dtype();
  std::vector<P2POp> msgs;
  size_t next = 0;
  for (const P2PMsg& m : g) {
    if (m.send && next == deferred_.size()) throw Error("pipeline: internal: a send of the schedule was never written");
    void* buf = m.send ? send_bufs_[deferred_[next++]].data() : recv_into;
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

void PipelineRunner::forward_op(int m, int64_t first_sample, Split split, bool with_grad, const P2PGroup& before) {
  const double t0 = MPI_Wtime(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp());
  const StageLayout& stage = model_.stage();
  const int slot = m % model_.slots();
  exchange(before, stage.first() ? nullptr : model_.stage_input_data(slot));
  // Tokens feed the embedding (first stage) and the loss (last stage); middle stages read nothing.
  if (stage.first() || stage.last()) {
    loader_.load(split, first_sample);
    model_.set_tokens(slot, loader_.inputs(), loader_.targets());
  }
  // d(loss)/d(token loss) times the loss scale (a power of two: exact in float)
  const float scale = float(loss_scale_) / float(double(loader_.global_batch()) * cfg_.model.seq_len);
  model_.forward(slot, with_grad, scale);
  if (!stage.last()) defer_send(model_.stage_output_data(slot));
  t_fwd_ += MPI_Wtime() - t0;
  comm_fwd_ += blocked(&grid_.tp()) + blocked(&grid_.pp()) - c0;
}

void PipelineRunner::backward_op(int m, const std::function<void(int)>& on_unit, const P2PGroup& before) {
  const double t0 = MPI_Wtime(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp()) + blocked(&grid_.dp());
  const StageLayout& stage = model_.stage();
  const int slot = m % model_.slots();
  exchange(before, stage.last() ? nullptr : model_.grad_buffer_data());
  model_.backward(slot, on_unit);
  if (!stage.first()) defer_send(model_.grad_buffer_data());
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
      forward_op(op.micro_batch, loader_.first_sample(samples_done, op.micro_batch), Split::Train, true, p2p_[i]);
    else
      backward_op(op.micro_batch, i + 1 == ops_.size() ? on_unit : std::function<void(int)>(), p2p_[i]);
  }
  exchange(p2p_.back(), nullptr);  // the sends of the last ops
  wait_sends();
  *loss_sum += model_.take_loss_sum();  // the step's one copy of the loss to the host
}

void PipelineRunner::validate(int batches, double* loss_sum) {
  // Validation micro-batch j is micro-batch j % M of validation batch j / M, laid out like a training batch.
  const int M = cfg_.train.micro_batches;
  std::vector<PipeOp> fwd;
  for (int j = 0; j < batches * M; ++j) fwd.push_back({PipeOp::Forward, j});
  const std::vector<P2PGroup> p2p = pipeline_p2p(fwd, grid_.shape().pp, grid_.pp_rank());
  for (int j = 0; j < batches * M; ++j)
    forward_op(j, loader_.first_sample(int64_t(j / M) * loader_.global_batch(), j % M), Split::Val, false,
               p2p[size_t(j)]);
  exchange(p2p.back(), nullptr);
  wait_sends();
  *loss_sum += model_.take_loss_sum();
}

}  // namespace gt
