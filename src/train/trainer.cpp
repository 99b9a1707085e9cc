#include "src/train/trainer.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <sys/stat.h>

#include "kernels/kernels.hpp"
#include "src/core/error.hpp"
#include "src/core/stop_signal.hpp"
#include "src/train/lr_schedule.hpp"
#include "src/train/metrics.hpp"

namespace gt {

namespace {

double now() { return MPI_Wtime(); }

double blocked(Comm* c) { return c ? c->stats().blocked_seconds : 0.0; }

// Test hook (tests/cli/test_bad_input.sh): GRIDTRAIN_TEST_FAIL_RANK=r with GRIDTRAIN_TEST_FAIL_STEP=s makes world
// rank r fail alone as step s begins, while the other ranks go on into that step's collectives.
void test_fail_hook(int world_rank, int step) {
  static const char* r = std::getenv("GRIDTRAIN_TEST_FAIL_RANK");
  static const char* s = std::getenv("GRIDTRAIN_TEST_FAIL_STEP");
  if (r && *r && s && *s && std::atoi(r) == world_rank && std::atoi(s) == step)
    throw Error("test hook: rank " + std::string(r) + " failed alone in step " + std::string(s));
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Forward FLOPs per token of the model, times 3 for forward + backward: 6 N (N = parameters that take part in
// matrix products, the tied head included, positions excluded) + 12 L T C for attention scores and values.
double model_flops_per_token(const ModelConfig& m, int64_t n_params) {
  return 6.0 * double(n_params - int64_t(m.seq_len) * m.d_model) + 12.0 * m.n_layer * double(m.seq_len) * m.d_model;
}

}  // namespace

Trainer::Trainer(const Config& cfg, Grid& grid, const std::string& config_text)
    : cfg_(cfg), grid_(grid), config_text_(config_text) {
  const ModelConfig& m = cfg_.model;
  const GridShape& g = grid_.shape();
  schedule_ = parse_schedule(cfg_.parallel.schedule);

  // Balance stages by estimated forward cost: a block ~ 24 C^2 + 4 T C per token, the head ~ 2 V C.
  const double block = 24.0 * m.d_model * double(m.d_model) + 4.0 * m.seq_len * double(m.d_model);
  const double head = 2.0 * m.vocab_size * double(m.d_model);
  std::vector<int> begin = partition_stages(m.n_layer, g.pp, 1.0, 0.02, head / block);
  stage_ = StageLayout{grid_.pp_rank(), g.pp, begin[grid_.pp_rank()], begin[grid_.pp_rank() + 1]};

  ops_ = pipeline_schedule(schedule_, g.pp, grid_.pp_rank(), cfg_.train.micro_batches);
  const int slots = std::max(1, max_in_flight(ops_));
  TensorParallel tp{grid_.tp_rank(), g.tp, g.tp > 1 ? &grid_.tp() : nullptr};
  model_ = std::make_unique<GPT<float>>(m, static_cast<uint64_t>(cfg_.train.seed), cfg_.train.micro_batch_size, stage_,
                                        tp, slots);
  data_ = make_data_source(cfg_);
  if (cfg_.data.prefetch > 0 && (stage_.first() || stage_.last()))
    prefetch_ = std::make_unique<BatchPrefetcher>(*data_, cfg_.data.prefetch + 1);
  if (data_->vocab_size() > m.vocab_size)
    throw Error("data: the dataset's vocabulary (" + std::to_string(data_->vocab_size()) +
                ") is larger than model.vocab_size (" + std::to_string(m.vocab_size) + ")");

  const size_t n = model_->store().size();
  adam_m_ = DeviceView<float>("adam_m", n);
  adam_v_ = DeviceView<float>("adam_v", n);
  if (g.dp > 1 && exec_on_host) {
    // On CPU builds the DP all-reduce can work in place in shared memory (parallel.allreduce=shm): the
    // gradient store moves into the DP communicator's registered region. Collective over the DP group.
    if (void* shared = grid_.dp().alloc_registered(n * sizeof(float)))
      model_->store().adopt_grads(static_cast<float*>(shared));
  }
  if (g.dp > 1)
    buckets_ = std::make_unique<GradBuckets>(model_->store().tensors(),
                                             static_cast<size_t>(cfg_.parallel.bucket_mb * 1048576.0), sizeof(float));

  global_batch_ = int64_t(cfg_.train.micro_batch_size) * cfg_.train.micro_batches * g.dp;
  StageLayout whole{0, 1, 0, m.n_layer};
  for (const TensorSpec& s : model_tensor_specs(m, whole, 0, 1)) n_params_ += s.global_size();
  flops_per_token_ = model_flops_per_token(m, n_params_);

  peak_gflops_ = cfg_.output.peak_gflops;
  if (peak_gflops_ <= 0) {
    peak_gflops_ = measure_sgemm_gflops(1536, 3);  // 512^3 ran below the BLAS's rate: MFU came out over 100%
    grid_.world().allreduce(&peak_gflops_, 1, DType::F64, ReduceOp::Min);
  }

  ckpt_dir_ = cfg_.checkpoint.dir.empty() ? cfg_.output.dir + "/checkpoints" : cfg_.checkpoint.dir;
  if (grid_.world_rank() == 0) {
    make_dirs(cfg_.output.dir);
    write_file_atomic(cfg_.output.dir + "/config.toml", config_text_);
  }
  grid_.world().barrier();
  if (cfg_.checkpoint.resume != "none") try_resume();
}

Trainer::~Trainer() = default;

// The global samples of micro-batch m of the step that starts at sample `samples_done`: DP rank r takes the
// r-th contiguous share of the global batch, so the global batch is the same sequences for any layout.
int64_t Trainer::train_first_sample(int64_t samples_done, int m) const {
  const int64_t B = cfg_.train.micro_batch_size;
  return samples_done + int64_t(grid_.dp_rank()) * B * cfg_.train.micro_batches + int64_t(m) * B;
}

// Keeps data.prefetch training micro-batches requested ahead of the one being consumed (requests are served
// and taken in order: micro-batches 0..M-1 of this step, then of the next).
void Trainer::request_train_micro_batches() {
  const int B = cfg_.train.micro_batch_size;
  while (prefetch_->outstanding() < cfg_.data.prefetch + 1) {
    std::vector<int64_t> samples(B);
    const int64_t first = train_first_sample(req_samples_done_, req_m_);
    for (int b = 0; b < B; ++b) samples[b] = first + b;
    prefetch_->request(Split::Train, std::move(samples));
    req_first_.push_back(first);
    if (++req_m_ == cfg_.train.micro_batches) {
      req_m_ = 0;
      req_samples_done_ += global_batch_;
    }
  }
}

void Trainer::load_micro_batch_tokens(Split split, int64_t first_sample, int slot) {
  const int B = cfg_.train.micro_batch_size, T = cfg_.model.seq_len;
  host_tokens_.resize(size_t(B) * (T + 1));
  host_inputs_.resize(size_t(B) * T);
  host_targets_.resize(size_t(B) * T);
  const double t0 = now();
  if (prefetch_ && split == Split::Train) {
    request_train_micro_batches();
    // A schedule that consumed micro-batches out of order would train on the wrong data: refuse instead.
    if (req_first_.front() != first_sample)
      throw Error("internal: prefetched micro-batch starts at sample " + std::to_string(req_first_.front()) +
                  ", the schedule wants " + std::to_string(first_sample));
    req_first_.pop_front();
    prefetch_->take(host_tokens_.data());  // the oldest request: this micro-batch
    request_train_micro_batches();         // the next read overlaps this micro-batch's compute
  } else {
    if (prefetch_) prefetch_->quiesce();  // HDF5 is not thread-safe
    std::vector<int64_t> samples(B);
    for (int b = 0; b < B; ++b) samples[b] = first_sample + b;
    data_->read(split, samples.data(), B, host_tokens_.data());
  }
  t_data_ += now() - t0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      host_inputs_[size_t(b) * T + t] = host_tokens_[size_t(b) * (T + 1) + t];
      host_targets_[size_t(b) * T + t] = host_tokens_[size_t(b) * (T + 1) + t + 1];
    }
  model_->set_tokens(slot, host_inputs_.data(), host_targets_.data());
}

void Trainer::forward_op(int m, bool with_grad, double* loss_sum) {
  const double t0 = now(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp());
  const int slot = m % model_->slots();
  const size_t n = model_->activation_elems();
  const int pp_rank = grid_.pp_rank();
  if (!stage_.first()) grid_.pp().recv(model_->stage_input(slot), n, DType::F32, pp_rank - 1, 2 * m);
  // Validation micro-batch m is micro-batch m % M of validation batch m / M, laid out like a training batch.
  const int M = cfg_.train.micro_batches;
  const int64_t first_sample = with_grad ? train_first_sample(samples_done_, m)
                                         : train_first_sample(int64_t(m / M) * global_batch_, m % M);
  // Tokens feed the embedding (first stage) and the loss (last stage); middle stages read nothing.
  if (stage_.first() || stage_.last())
    load_micro_batch_tokens(with_grad ? Split::Train : Split::Val, first_sample, slot);
  const float scale = 1.0f / float(double(global_batch_) * cfg_.model.seq_len);
  model_->forward(slot, with_grad, scale, loss_sum);
  if (!stage_.last()) {
    if (sends_used_ == send_bufs_.size()) send_bufs_.emplace_back("pp_send", n);
    DeviceView<float>& buf = send_bufs_[sends_used_++];
    Kokkos::deep_copy(buf, Kokkos::View<float*, mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                               model_->stage_output(slot), n));
    sends_.push_back(grid_.pp().isend(buf.data(), n, DType::F32, pp_rank + 1, 2 * m));
  }
  t_fwd_ += now() - t0;
  comm_fwd_ += blocked(&grid_.tp()) + blocked(&grid_.pp()) - c0;
}

void Trainer::backward_op(int m, bool last) {
  const double t0 = now(), c0 = blocked(&grid_.tp()) + blocked(&grid_.pp()) + blocked(&grid_.dp());
  const int slot = m % model_->slots();
  const size_t n = model_->activation_elems();
  const int pp_rank = grid_.pp_rank();
  if (!stage_.last()) grid_.pp().recv(model_->grad_buffer(), n, DType::F32, pp_rank + 1, 2 * m + 1);
  std::function<void(int)> on_unit;
  if (last && buckets_) {
    buckets_->begin_step();
    float* grads = model_->store().grads();
    on_unit = [this, grads](int u) { buckets_->unit_done(u, grid_.dp(), grads); };
  }
  model_->backward(slot, on_unit);
  if (!stage_.first()) {
    if (sends_used_ == send_bufs_.size()) send_bufs_.emplace_back("pp_send", n);
    DeviceView<float>& buf = send_bufs_[sends_used_++];
    Kokkos::deep_copy(buf, Kokkos::View<float*, mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                               model_->grad_buffer(), n));
    sends_.push_back(grid_.pp().isend(buf.data(), n, DType::F32, pp_rank - 1, 2 * m + 1));
  }
  t_bwd_ += now() - t0;
  comm_bwd_ += blocked(&grid_.tp()) + blocked(&grid_.pp()) + blocked(&grid_.dp()) - c0;
}

double Trainer::optimizer_step(double lr) {
  ParamStore<float>& st = model_->store();
  // Global gradient norm: every element of the global model counted once (sharded tensors on each TP rank,
  // replicated ones on TP rank 0, the tied embedding on the first stage only).
  double sumsq = 0;
  for (const TensorSpec& s : st.tensors()) {
    const bool counted = (s.split_dim >= 0 || grid_.tp_rank() == 0) && !(s.name == "wte" && !stage_.first());
    if (counted) sumsq += sum_squares(st.grads() + s.offset, long(s.size));
  }
  if (grid_.mp().size() > 1) grid_.mp().allreduce(&sumsq, 1, DType::F64, ReduceOp::Sum);
  const double norm = std::sqrt(sumsq);
  const float g_scale = static_cast<float>(clip_scale(norm, cfg_.train.grad_clip));
  const TrainConfig& t = cfg_.train;
  for (const TensorSpec& s : st.tensors()) {
    adamw_update(st.params() + s.offset, st.grads() + s.offset, adam_m_.data() + s.offset, adam_v_.data() + s.offset,
                 long(s.size), float(lr), float(t.beta1), float(t.beta2), float(t.eps),
                 float(s.decay ? t.weight_decay : 0.0), step_ + 1, g_scale);
  }
  return norm;
}

StepStats Trainer::train_step() {
  Comm* embed = grid_.embed();
  const double t0 = now();
  const double tp0 = blocked(&grid_.tp()), pp0 = blocked(&grid_.pp()), dp0 = blocked(&grid_.dp());
  const double other0 = blocked(&grid_.mp()) + blocked(embed);
  t_fwd_ = t_bwd_ = comm_fwd_ = comm_bwd_ = t_data_ = 0;
  model_->store().zero_grads();

  double loss_sum = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const PipeOp& op = ops_[i];
    if (op.kind == PipeOp::Forward) forward_op(op.micro_batch, true, &loss_sum);
    else backward_op(op.micro_batch, i + 1 == ops_.size());
  }
  for (auto& r : sends_) r->wait();
  sends_.clear();
  sends_used_ = 0;
  if (buckets_) buckets_->finish(grid_.dp(), model_->store().grads());
  if (embed) {
    ParamStore<float>& st = model_->store();
    embed->allreduce(st.grad("wte"), st.spec("wte").size, DType::F32, ReduceOp::Sum);
  }
  const double t_opt0 = now();
  const double lr = learning_rate(step_, cfg_.train.lr, cfg_.train.min_lr, cfg_.train.warmup_steps,
                                  cfg_.train.decay_steps, cfg_.train.steps);
  const double norm = optimizer_step(lr);
  Kokkos::fence();
  const double t_end = now();

  // Two small all-reduces: sums for the loss, the stop flag and the timing breakdown (means over ranks), and
  // maxima for the slowest rank's step and compute time.
  const bool loss_owner = stage_.last() && grid_.tp_rank() == 0;
  const double tp_ms = (blocked(&grid_.tp()) - tp0) * 1e3, pp_ms = (blocked(&grid_.pp()) - pp0) * 1e3;
  const double dp_ms = (blocked(&grid_.dp()) - dp0) * 1e3;
  const double other_ms = (blocked(&grid_.mp()) + blocked(embed) - other0) * 1e3;
  const double step_ms = (t_end - t0) * 1e3, compute_ms = step_ms - (tp_ms + pp_ms + dp_ms + other_ms);
  // A stop file (train.stop_file, written by slurm/train.sbatch on the time-limit warning) is looked at by rank 0
  // only: one stat per step on the shared file system, not one per rank.
  const bool stop_here = stop_requested_locally() ||
                         (grid_.world_rank() == 0 && !cfg_.train.stop_file.empty() && file_exists(cfg_.train.stop_file));
  double v[12] = {loss_owner ? loss_sum : 0.0, stop_here ? 1.0 : 0.0, step_ms,
                  (t_fwd_ - comm_fwd_ - t_data_) * 1e3, (t_bwd_ - comm_bwd_) * 1e3,
                  (t_end - t_opt0) * 1e3, t_data_ * 1e3, tp_ms, pp_ms, dp_ms, other_ms, compute_ms};
  double vmax[2] = {step_ms, compute_ms};
  grid_.world().allreduce(v, 12, DType::F64, ReduceOp::Sum);
  grid_.world().allreduce(vmax, 2, DType::F64, ReduceOp::Max);
  const double ms_max = vmax[0];
  const double W = grid_.world_size();
  StepStats s;
  s.loss = v[0] / (double(global_batch_) * cfg_.model.seq_len);
  s.lr = lr;
  s.grad_norm = norm;
  s.ms = v[2] / W;
  s.ms_max = ms_max;
  s.fwd_ms = v[3] / W;
  s.bwd_ms = v[4] / W;
  s.opt_ms = v[5] / W;
  s.data_ms = v[6] / W;
  s.comm_tp_ms = v[7] / W;
  s.comm_pp_ms = v[8] / W;
  s.comm_dp_ms = v[9] / W;
  s.comm_other_ms = v[10] / W;
  s.compute_ms = v[11] / W;
  s.compute_ms_max = vmax[1];
  if (v[1] > 0) request_stop_locally();  // some rank was asked to stop: every rank stops at this step
  step_ += 1;
  samples_done_ += global_batch_;
  return s;
}

double Trainer::validate() {
  // data.val_batches global batches of the val split (the same sequences for every layout with the same
  // global batch, and the same ones every time, so successive values compare).
  double loss_sum = 0;
  const int nb = cfg_.data.val_batches * cfg_.train.micro_batches;
  for (int j = 0; j < nb; ++j) forward_op(j, false, &loss_sum);
  for (auto& r : sends_) r->wait();
  sends_.clear();
  sends_used_ = 0;
  double v = (stage_.last() && grid_.tp_rank() == 0) ? loss_sum : 0.0;
  grid_.world().allreduce(&v, 1, DType::F64, ReduceOp::Sum);
  return v / (double(cfg_.data.val_batches) * double(global_batch_) * cfg_.model.seq_len);
}

void Trainer::log_step(const StepStats& s) {
  if (grid_.world_rank() != 0) return;
  const double tokens = double(global_batch_) * cfg_.model.seq_len;
  const double tok_s = tokens / (s.ms_max * 1e-3);
  const double mfu = flops_per_token_ * tok_s / (peak_gflops_ * 1e9 * grid_.world_size());
  const double comm = s.comm_tp_ms + s.comm_pp_ms + s.comm_dp_ms + s.comm_other_ms;
  if (step_ % cfg_.output.log_every == 0 || step_ == cfg_.train.steps) {
    std::printf("step %5d/%d | loss %.6f | lr %.3e | gnorm %.4f | %8.1f ms | %9.0f tok/s | MFU %5.1f%% | comm %4.1f%%",
                step_, cfg_.train.steps, s.loss, s.lr, s.grad_norm, s.ms_max, tok_s, 100.0 * mfu,
                100.0 * comm / s.ms);
    if (s.val_loss >= 0) std::printf(" | val %.4f", s.val_loss);
    std::printf("\n");
    std::fflush(stdout);
  }
  JsonObject j;
  j.integer("step", step_).num("loss", s.loss).num("lr", s.lr).num("grad_norm", s.grad_norm).num("ms", s.ms)
      .num("ms_max", s.ms_max).num("tokens_per_s", tok_s).num("mfu", mfu).num("forward_ms", s.fwd_ms)
      .num("backward_ms", s.bwd_ms).num("optimizer_ms", s.opt_ms).num("comm_tp_ms", s.comm_tp_ms)
      .num("comm_pp_ms", s.comm_pp_ms).num("comm_dp_ms", s.comm_dp_ms).num("comm_other_ms", s.comm_other_ms)
      .num("exposed_comm_share", comm / s.ms).num("compute_ms", s.compute_ms).num("compute_ms_max", s.compute_ms_max);
  if (s.val_loss >= 0) j.num("val_loss", s.val_loss);
  std::ofstream out(cfg_.output.dir + "/metrics.jsonl", std::ios::app);
  out << j.dump() << "\n";
}

int Trainer::run() {
  install_stop_signal_handlers();
  req_samples_done_ = samples_done_;  // prefetching starts at the first micro-batch of this run
  req_m_ = 0;
  req_first_.clear();
  if (step_ >= cfg_.train.steps) {
    if (grid_.world_rank() == 0)
      std::printf("gridtrain: run already complete at step %d of %d\n", step_, cfg_.train.steps);
    write_summary("finished");
    return kExitOk;
  }
  while (step_ < cfg_.train.steps) {
    test_fail_hook(grid_.world_rank(), step_ + 1);
    StepStats s = train_step();
    if (cfg_.data.val_every > 0 && step_ % cfg_.data.val_every == 0) s.val_loss = val_loss_last_ = validate();
    history_.push_back(s);
    log_step(s);
    if (cfg_.checkpoint.every > 0 && step_ % cfg_.checkpoint.every == 0) save("every");
    const bool slice_done = cfg_.train.max_steps_per_run > 0 && int(history_.size()) >= cfg_.train.max_steps_per_run;
    if ((stop_requested_locally() || slice_done) && step_ < cfg_.train.steps) {
      if (last_saved_step_ != step_) save(slice_done ? "max_steps_per_run" : "stop request");
      if (grid_.world_rank() == 0)
        std::printf("gridtrain: stopped %s at step %d; checkpoint in %s\n",
                    slice_done ? "after train.max_steps_per_run" : "on request (signal or stop file)", step_, ckpt_dir_.c_str());
      write_summary("preempted");
      return kExitPreempted;
    }
  }
  if (cfg_.checkpoint.save_final && last_saved_step_ != step_) save("final");
  write_summary("finished");
  return kExitOk;
}

}  // namespace gt
