// The trainer's persistent state: checkpoint shards in global shapes, resume, the run summary, and the
// gathered parameters that tests compare across layouts.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/train/metrics.hpp"
#include "src/train/schedule.hpp"
#include "src/train/trainer.hpp"

namespace gt {

namespace {
constexpr int64_t kStateVersion = 1;

std::string model_signature(const ModelConfig& m) {
  return "gpt2 n_layer=" + std::to_string(m.n_layer) + " d_model=" + std::to_string(m.d_model) +
         " n_head=" + std::to_string(m.n_head) + " seq_len=" + std::to_string(m.seq_len) +
         " vocab_size=" + std::to_string(m.vocab_size);
}
}  // namespace

std::vector<TensorShard> Trainer::checkpoint_shards() {
  ParamStore<float>& st = model_->store();
  std::vector<TensorShard> out;
  const std::pair<const char*, float*> groups[] = {
      {"params/", st.params()}, {"adam_m/", adam_m_.data()}, {"adam_v/", adam_v_.data()}};
  for (const auto& [prefix, base] : groups) {
    for (const TensorSpec& s : st.tensors()) {
      TensorShard t;
      t.name = std::string(prefix) + s.name;
      t.global_shape = s.global_shape;
      t.start = s.local_start();
      t.count = s.local_shape();
      t.data = base + s.offset;  // host memory on CPU builds; GPU builds stage through a mirror (later work)
      // One writer per global element: DP rank 0, TP rank 0 for replicated tensors, first stage for wte.
      t.writer = grid_.dp_rank() == 0 && (s.split_dim >= 0 || grid_.tp_rank() == 0) &&
                 !(s.name == "wte" && !stage_.first());
      out.push_back(std::move(t));
    }
  }
  return out;
}

CheckpointMeta Trainer::checkpoint_meta() const {
  CheckpointMeta meta;
  meta.ints["state_version"] = kStateVersion;
  meta.ints["step"] = step_;
  meta.ints["samples_done"] = samples_done_;
  meta.ints["global_batch"] = global_batch_;
  meta.ints["seed"] = cfg_.train.seed;
  meta.ints["grid.tp"] = grid_.shape().tp;
  meta.ints["grid.pp"] = grid_.shape().pp;
  meta.ints["grid.dp"] = grid_.shape().dp;
  meta.reals["lr"] = learning_rate_at_step();
  meta.reals["loss"] = history_.empty() ? last_loss_ : history_.back().loss;
  meta.strings["model"] = model_signature(cfg_.model);
  meta.strings["config"] = config_text_;
  meta.strings["data"] = data_->describe();
  // The run has no sequential RNG: initialisation and data order are pure functions of (seed, index), so
  // (seed, step, samples_done) is the whole random state.
  meta.strings["rng"] = "counter-based: seed + samples_done";
  return meta;
}

double Trainer::learning_rate_at_step() const {
  return learning_rate(std::max(0, step_ - 1), cfg_.train.lr, cfg_.train.min_lr, cfg_.train.warmup_steps,
                       cfg_.train.decay_steps, cfg_.train.steps);
}

void Trainer::save(const std::string& reason) {
  Kokkos::fence();
  if (prefetch_) prefetch_->quiesce();  // no HDF5 read in flight while the checkpoint is written
  CheckpointOptions opt;
  opt.dir = ckpt_dir_;
  opt.keep = cfg_.checkpoint.keep;
  const double t0 = MPI_Wtime();
  std::string path = save_checkpoint(grid_.world_mpi(), opt, step_, checkpoint_shards(), checkpoint_meta());
  last_saved_step_ = step_;
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: checkpoint %s (%s, %.2f s)\n", path.c_str(), reason.c_str(), MPI_Wtime() - t0);
}

void Trainer::try_resume() {
  std::string path = cfg_.checkpoint.resume;
  if (path == "auto") {
    auto found = find_latest_checkpoint(grid_.world_mpi(), ckpt_dir_);
    if (!found) {
      if (grid_.world_rank() == 0) std::printf("gridtrain: no checkpoint in %s, starting fresh\n", ckpt_dir_.c_str());
      return;
    }
    path = *found;
  }
  CheckpointMeta meta = read_checkpoint_meta(grid_.world_mpi(), path);
  const std::string want = model_signature(cfg_.model);
  if (meta.strings["model"] != want)
    throw Error(path + ": checkpoint of another model (" + meta.strings["model"] + "), this run is " + want);
  std::vector<TensorShard> shards = checkpoint_shards();
  load_checkpoint(grid_.world_mpi(), path, shards, meta);
  step_ = static_cast<int>(meta.ints.at("step"));
  samples_done_ = meta.ints.at("samples_done");
  last_saved_step_ = step_;
  resumed_from_ = path;
  if (meta.reals.count("loss")) last_loss_ = meta.reals["loss"];
  const int64_t saved_batch = meta.ints.count("global_batch") ? meta.ints["global_batch"] : global_batch_;
  if (saved_batch != global_batch_ && grid_.world_rank() == 0)
    std::fprintf(stderr,
                 "gridtrain: warning: global batch is %lld sequences (micro_batch_size x micro_batches x dp), the "
                 "checkpoint was written with %lld; the data continue at sample %lld but the run is no longer the "
                 "same as the uninterrupted one (set train.micro_batches to keep the global batch)\n",
                 (long long)global_batch_, (long long)saved_batch, (long long)samples_done_);
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: resumed from %s at step %d (written on tp=%lld pp=%lld dp=%lld)\n", path.c_str(), step_,
                (long long)meta.ints["grid.tp"], (long long)meta.ints["grid.pp"], (long long)meta.ints["grid.dp"]);
}

std::vector<std::pair<std::string, std::vector<float>>> Trainer::gather_params() {
  StageLayout whole{0, 1, 0, cfg_.model.n_layer};
  std::vector<std::pair<std::string, std::vector<float>>> out;
  ParamStore<float>& st = model_->store();
  for (const TensorSpec& g : model_tensor_specs(cfg_.model, whole, 0, 1)) {
    std::vector<float> full(static_cast<size_t>(g.global_size()), 0.0f);
    if (st.has(g.name)) {
      const TensorSpec& s = st.spec(g.name);
      const bool writer = grid_.dp_rank() == 0 && (s.split_dim >= 0 || grid_.tp_rank() == 0) &&
                          !(s.name == "wte" && !stage_.first());
      if (writer) {
        const float* p = st.params() + s.offset;
        for (size_t i = 0; i < s.size; ++i) full[static_cast<size_t>(s.global_index(int64_t(i)))] = p[i];
      }
    }
    grid_.world().allreduce(full.data(), full.size(), DType::F32, ReduceOp::Sum);
    out.emplace_back(g.name, std::move(full));
  }
  return out;
}

void Trainer::write_summary(const std::string& status) {
  // Means over this process's steps, the first one (warm-up) left out when there are more.
  size_t first = history_.size() > 1 ? 1 : 0, n = history_.size() - first;
  StepStats mean;
  for (size_t i = first; i < history_.size(); ++i) {
    const StepStats& s = history_[i];
    mean.ms += s.ms; mean.ms_max += s.ms_max; mean.fwd_ms += s.fwd_ms; mean.bwd_ms += s.bwd_ms;
    mean.opt_ms += s.opt_ms; mean.data_ms += s.data_ms; mean.comm_tp_ms += s.comm_tp_ms;
    mean.comm_pp_ms += s.comm_pp_ms; mean.comm_dp_ms += s.comm_dp_ms; mean.comm_other_ms += s.comm_other_ms;
    mean.compute_ms += s.compute_ms; mean.compute_ms_max += s.compute_ms_max;
  }
  if (n > 0) {
    for (double* x : {&mean.ms, &mean.ms_max, &mean.fwd_ms, &mean.bwd_ms, &mean.opt_ms, &mean.data_ms,
                      &mean.comm_tp_ms, &mean.comm_pp_ms, &mean.comm_dp_ms, &mean.comm_other_ms, &mean.compute_ms,
                      &mean.compute_ms_max})
      *x /= double(n);
  }
  double rss = peak_rss_bytes();
  grid_.world().allreduce(&rss, 1, DType::F64, ReduceOp::Max);
  if (grid_.world_rank() != 0) return;

  const GridShape& g = grid_.shape();
  const double tokens = double(global_batch_) * cfg_.model.seq_len;
  const double tok_s = n > 0 ? tokens / (mean.ms_max * 1e-3) : 0.0;
  const double comm = mean.comm_tp_ms + mean.comm_pp_ms + mean.comm_dp_ms + mean.comm_other_ms;
  const double mfu = flops_per_token_ * tok_s / (peak_gflops_ * 1e9 * g.size());
  const size_t state_bytes = 4 * model_->store().size() * sizeof(float);  // params, grads, AdamW m and v
  const size_t act_bytes = size_t(model_->slots()) * model_->activation_bytes_per_slot() + model_->work_bytes();
  JsonObject j;
  j.str("status", status).integer("world_size", g.size()).integer("tp", g.tp).integer("pp", g.pp)
      .integer("dp", g.dp).integer("steps", cfg_.train.steps).integer("step", step_)
      .integer("steps_this_run", (long long)history_.size())
      .num("final_loss", history_.empty() ? last_loss_ : history_.back().loss)
      .num("val_loss", val_loss_last_).num("tokens_per_s", tok_s).num("tokens_per_s_per_rank", tok_s / g.size())
      .num("ms_per_step", mean.ms_max).num("ms_per_step_mean_rank", mean.ms).num("mfu", mfu)
      .num("exposed_comm_share", n > 0 && mean.ms > 0 ? comm / mean.ms : 0.0).num("forward_ms", mean.fwd_ms)
      .num("backward_ms", mean.bwd_ms).num("optimizer_ms", mean.opt_ms).num("data_ms", mean.data_ms)
      .num("comm_exposed_ms", comm).num("comm_tp_ms", mean.comm_tp_ms).num("comm_pp_ms", mean.comm_pp_ms)
      .num("comm_dp_ms", mean.comm_dp_ms).num("comm_other_ms", mean.comm_other_ms)
      .num("compute_ms", mean.compute_ms).num("compute_ms_max", mean.compute_ms_max)
      // the slowest-computing rank's exposed communication (the cost no load balancing removes) and the
      // imbalance the other ranks wait for, as shares of the step
      .num("exposed_comm_share_slowest", n > 0 && mean.ms_max > 0 ? std::max(0.0, mean.ms_max - mean.compute_ms_max) / mean.ms_max : 0.0)
      .num("imbalance_share", n > 0 && mean.ms_max > 0 ? (mean.compute_ms_max - mean.compute_ms) / mean.ms_max : 0.0)
      .num("pipeline_bubble", bubble_fraction(g.pp, cfg_.train.micro_batches))
      .integer("micro_batch_size", cfg_.train.micro_batch_size).integer("micro_batches", cfg_.train.micro_batches)
      .integer("global_batch_tokens", (long long)tokens).integer("seq_len", cfg_.model.seq_len)
      .integer("params", n_params_).num("flops_per_token", flops_per_token_).num("peak_gflops_per_rank", peak_gflops_)
      .str("schedule", cfg_.parallel.schedule).str("allreduce", cfg_.parallel.allreduce)
      .num("peak_rss_mb", rss / 1048576.0).num("analytic_state_mb", state_bytes / 1048576.0)
      .num("analytic_activation_mb", act_bytes / 1048576.0).str("resumed_from", resumed_from_)
      .str("data", data_->describe()).str("checkpoint_dir", ckpt_dir_);
  write_file_atomic(cfg_.output.dir + "/summary.json", j.dump() + "\n");
}

}  // namespace gt
