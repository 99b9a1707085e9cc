#include "src/train/report/run_report.hpp"

#include "kernels/device_peak.hpp"
#include "kernels/kokkos_compat.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "src/core/model_flops.hpp"
#include "src/core/test_hooks.hpp"
#include "src/model/gpt.hpp"
#include "src/train/report/host_peak.hpp"
#include "src/train/report/metrics.hpp"
#include "src/train/resume_requirements.hpp"
#include "src/train/schedule.hpp"

namespace gt {

namespace {
std::string int_list(const std::vector<int>& v) {  // a JSON array of integers
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

// parallel.adapt = monitor: the steps of this invocation each rank was flagged as a straggler.
std::vector<int> straggler_steps_per_rank(const std::vector<StepStats>& h, int ranks) {
  std::vector<int> steps(size_t(ranks), 0);
  for (const StepStats& s : h)
    for (int r : s.straggler.stragglers) steps[size_t(r)] += 1;
  return steps;
}
}  // namespace

RunReport::RunReport(const Config& cfg, Grid& grid, int64_t global_batch, const ModelFamily& family)
    : cfg_(cfg), grid_(grid), tokens_per_step_(double(global_batch) * family.positions_per_sample()),
      unit_(family.position_name()), per_s_key_(unit_ + "s_per_s") {
  for (const TensorSpec& s : family.global_specs()) n_params_ += s.global_size();
  flops_per_token_ = family.train_flops_per_position();  // GPT: the planner's and bench's count too
  // MFU as PaLM and Megatron define it: model FLOP/s over the hardware peak (the widest fp32 FMA of one core,
  // measured; output.peak_gflops overrides). The sgemm-relative figure (how close to the GEMM library's own rate
  // the step runs) stays as a second, named number, measured through the GEMM backend the run uses. It costs 4
  // GEMMs of 1536^3 (29 GFLOP: 0.2 s of an idle core, seconds with ranks sharing loaded cores), so a run given
  // output.peak_gflops (every test, to skip the start-up measurements) measures neither and has no mfu_sgemm.
  double peaks[2] = {cfg.output.peak_gflops, cfg.output.peak_gflops > 0 ? 0.0 : measure_sgemm_gflops(1536, 3)};
  // GPU builds: the device's datasheet peak for the precision the GEMMs run in (fp32: plain FP32 FMA, cuBLAS
  // SGEMM without TF32; bf16/fp16: dense tensor-core rate), kernels/device_peak.cpp. A device missing from the
  // table falls back to the measured sgemm rate (the start line names the peak it used).
  peak_kind_ = "output.peak_gflops";
  if (peaks[0] <= 0 && !exec_on_host) {
    peaks[0] = 1e3 * device_peak_tflops(device_name(), cfg.train.precision);
    peak_kind_ = cfg.train.precision + " datasheet peak of " + device_name();
  }
  if (peaks[0] <= 0 && exec_on_host) {
    // CPUs: the peak of the instruction the run's GEMMs use. bf16 GEMMs run on the bf16 dot product
    // (vdpbf16ps: twice the fp32 FMA rate per core), so a bf16 run against the fp32 FMA peak reads up to 2x
    // too high (a step line of 86-106% on the small preset). fp16 has no dot-product instruction on the CPUs
    // oneDNN 2.6 supports it on here: its GEMMs convert to fp32, the fp32 peak applies. Measured robustly and
    // cached per CPU model (src/train/report/host_peak.hpp), so MFU moves with tokens/s, not with the load.
    const HostPeak hp = resolve_host_peak(cfg.choices().precision == Precision::BF16, &grid_.world());
    peaks[0] = hp.gflops;
    peak_kind_ = hp.kind;
    peak_provenance_ = hp.provenance;
  }
  if (peaks[0] <= 0) {  // no FMA loop for this CPU: fall back to the sgemm rate
    peaks[0] = peaks[1];
    peak_kind_ = "sgemm rate (no peak measured)";
  }
  grid_.world().allreduce(peaks, 2, DType::F64, ReduceOp::Min);
  peak_gflops_ = peaks[0];
  sgemm_gflops_ = peaks[1];
  if (grid_.world_rank() == 0) {
    if (sgemm_gflops_ > 0)
      std::printf("gridtrain: MFU against the %s: %.1f GFLOP/s per rank; mfu_sgemm against the GEMM backend's "
                  "sgemm: %.1f GFLOP/s per rank\n",
                  peak_kind_.c_str(), peak_gflops_, sgemm_gflops_);
    else
      std::printf("gridtrain: MFU against the %s: %.1f GFLOP/s per rank; no mfu_sgemm (the sgemm rate is not "
                  "measured when output.peak_gflops is given)\n",
                  peak_kind_.c_str(), peak_gflops_);
    if (!peak_provenance_.empty()) std::printf("gridtrain: peak from %s\n", peak_provenance_.c_str());
  }
  // Energy: the GPU's NVML counter on GPU builds, the CPU package's RAPL counter otherwise (collective).
  // The test hooks test_hooks::powercap_root() / cpu_sysfs_root() point the RAPL reader at a fake tree.
  energy_ = make_run_meter(grid_.world_mpi(), exec_on_host ? "" : device_pci_bus_id(),
                           test_hooks::powercap_root(), test_hooks::cpu_sysfs_root());
  if (grid_.world_rank() == 0) std::printf("gridtrain: energy: %s\n", energy_->source().c_str());
  started_ = std::chrono::steady_clock::now();  // after the start-up measurements: wall_s counts training time
}

double RunReport::step_energy_j() {
  const std::optional<double> j = energy_->joules();
  if (!j) return NAN;
  const double d = *j - energy_seen_j_;
  energy_seen_j_ = *j;
  return d;
}

void RunReport::log_step(int step, const StepStats& s) const {
  if (grid_.world_rank() != 0) return;
  const double tok_s = tokens_per_step_ / (s.ms_max * 1e-3);
  const double mfu = flops_per_token_ * tok_s / (peak_gflops_ * 1e9 * grid_.world_size());
  const double comm = s.comm_ms();
  if (step % cfg_.output.log_every == 0 || step == cfg_.train.steps) {
    std::printf("step %5d/%d | loss %.6f | lr %.3e | gnorm %.4f | %8.1f ms | %9.0f %s/s | MFU %5.1f%%", step,
                cfg_.train.steps, s.loss, s.lr, s.grad_norm, s.ms_max, tok_s, short_unit(), 100.0 * mfu);
    if (sgemm_gflops_ > 0) std::printf(" (sgemm %.0f%%)", 100.0 * mfu_sgemm(mfu));
    std::printf(" | comm %4.1f%%", 100.0 * comm / s.ms);
    if (s.val_loss >= 0) std::printf(" | val %.4f", s.val_loss);
    if (s.val_top1 >= 0) std::printf(" | top-1 %.2f%%", 100.0 * s.val_top1);
    if (cfg_.dynamic_loss_scale()) std::printf(" | scale %g", s.loss_scale);
    if (s.skipped && s.bad.empty()) std::printf(" | skipped (overflow: inf/NaN gradients)");
    std::printf("\n");
    std::fflush(stdout);
  }
  for (int r : s.straggler.became)  // every change of the verdict gets its line, whatever output.log_every says
    std::printf("gridtrain: step %d: rank %d is a straggler: its compute above %.2fx its peers' median in %d of the "
                "last %d steps (slowest now: rank %d at %.2fx; parallel.adapt = %s)\n", step, r,
                cfg_.parallel.straggler_ratio, StragglerConfig{}.k, StragglerConfig{}.window, s.straggler.slowest_rank,
                s.straggler.slowest_ratio, cfg_.parallel.adapt.c_str());
  for (int r : s.straggler.stopped)
    std::printf("gridtrain: step %d: rank %d is no longer a straggler\n", step, r);
  if (!s.bad.empty())  // every bad step gets its line, whatever output.log_every says
    std::printf("gridtrain: warning: step %d: %s; %s (train.nonfinite = %s)\n", step, s.bad.c_str(),
                s.rolled_back_to >= 0 ? ("rolled back to step " + std::to_string(s.rolled_back_to)).c_str()
                : s.skipped           ? "update skipped"
                                      : "update kept (the loss is known only after the update)",
                cfg_.train.nonfinite.c_str());
  std::fflush(stdout);
  JsonObject j;
  j.integer("step", step)
      .num("wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count())
      .num("loss", s.loss).num("lr", s.lr).num("grad_norm", s.grad_norm).num("ms", s.ms)
      .num("ms_max", s.ms_max).num(per_s_key_, tok_s).num("mfu", mfu).num("forward_ms", s.fwd_ms)
      .num("backward_ms", s.bwd_ms).num("optimizer_ms", s.opt_ms).num("comm_tp_ms", s.comm_tp_ms)
      .num("comm_pp_ms", s.comm_pp_ms).num("comm_dp_ms", s.comm_dp_ms).num("comm_other_ms", s.comm_other_ms)
      .num("exposed_comm_share", comm / s.ms).num("compute_ms", s.compute_ms).num("compute_ms_max", s.compute_ms_max);
  if (sgemm_gflops_ > 0) j.num("mfu_sgemm", mfu_sgemm(mfu));
  if (s.val_loss >= 0) j.num("val_loss", s.val_loss);
  if (s.val_top1 >= 0) j.num("val_top1", s.val_top1);
  j.num("loss_scale", s.loss_scale).integer("skipped", s.skipped ? 1 : 0);
  if (s.wire_bytes >= 0) j.num("wire_bytes", s.wire_bytes).num("compression_ratio", s.compression_ratio);
  if (s.residual_norm >= 0) j.num("residual_norm", s.residual_norm);
  if (s.skipped) j.str("skip_reason", s.bad.empty() ? "overflow: inf/NaN gradients" : s.bad);
  if (!s.bad.empty()) j.str("bad_step", s.bad);
  if (s.rolled_back_to >= 0) j.integer("rolled_back_to", s.rolled_back_to);
  if (s.energy_j >= 0) j.num("energy_j", s.energy_j).num("joules_per_" + unit_, s.energy_j / tokens_per_step_);
  if (s.straggler_monitored)
    j.raw("stragglers", int_list(s.straggler.stragglers)).integer("slowest_rank", s.straggler.slowest_rank)
        .num("slowest_ratio", s.straggler.slowest_ratio);
  if (!s.adapt_json.empty()) j.raw("adapt", s.adapt_json);
  std::ofstream out(cfg_.output.dir + "/metrics.jsonl", std::ios::app);
  out << j.dump() << "\n";
}

void RunReport::write_summary(const RunSummaryInputs& in) const {
  // Means over this process's steps, the first one (warm-up) left out when there are more.
  const std::vector<StepStats>& h = *in.history;
  const size_t first = h.size() > 1 ? 1 : 0, n = h.size() - first;
  const StepStats mean = mean_step_stats(h.data() + first, h.data() + h.size());
  double val_loss = -1, val_top1 = -1;
  for (const StepStats& s : h) {
    if (s.val_loss >= 0) val_loss = s.val_loss;
    if (s.val_top1 >= 0) val_top1 = s.val_top1;
  }
  double rss[2] = {peak_rss_bytes(), pss_bytes()};  // the largest over ranks (-1: no PSS on this kernel)
  grid_.world().allreduce(rss, 2, DType::F64, ReduceOp::Max);
  double ledger[6];
  for (int k = 0; k < 3; ++k) ledger[k] = in.ledger_predicted[k], ledger[3 + k] = in.ledger_allocated[k];
  grid_.world().allreduce(ledger, 6, DType::F64, ReduceOp::Max);
  if (grid_.world_rank() != 0) return;

  const GridShape& g = grid_.shape();
  const double tok_s = n > 0 ? tokens_per_step_ / (mean.ms_max * 1e-3) : 0.0;
  const double comm = mean.comm_ms();
  const double mfu = flops_per_token_ * tok_s / (peak_gflops_ * 1e9 * g.size());
  JsonObject j;
  j.str("status", in.status).integer("world_size", g.size()).integer("tp", g.tp).integer("pp", g.pp)
      .integer("dp", g.dp).integer("steps", cfg_.train.steps).integer("step", in.step)
      .integer("steps_this_run", (long long)h.size())
      .num("final_loss", h.empty() ? in.last_loss : h.back().loss)
      .num("val_loss", val_loss).num("val_top1", val_top1).num(per_s_key_, tok_s).num(per_s_key_ + "_per_rank", tok_s / g.size())
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
      .integer("global_batch_" + unit_ + "s", (long long)tokens_per_step_).integer("seq_len", unit_ == "token" ? cfg_.model.seq_len : 1).str("model", model_signature(cfg_.model))
      .integer("params", n_params_).num("flops_per_" + unit_, flops_per_token_).num("peak_gflops_per_rank", peak_gflops_).str("peak_kind", peak_kind_).str("peak_provenance", peak_provenance_)
      .str("schedule", cfg_.parallel.schedule).str("allreduce", cfg_.parallel.allreduce)
      .num("peak_rss_mb", rss[0] / 1048576.0).num("pss_end_mb", rss[1] < 0 ? -1.0 : rss[1] / 1048576.0)
      .num("analytic_state_mb", in.state_bytes / 1048576.0)
      .num("analytic_activation_mb", in.activation_bytes / 1048576.0).str("activation_dtype", in.activation_dtype)
      .str("recompute", cfg_.train.recompute).integer("zero", in.zero_stage)
      .num("state_params_mb_predicted", ledger[0] / 1048576.0).num("state_grads_mb_predicted", ledger[1] / 1048576.0)
      .num("state_optimizer_mb_predicted", ledger[2] / 1048576.0).num("state_params_mb", ledger[3] / 1048576.0)
      .num("state_grads_mb", ledger[4] / 1048576.0).num("state_optimizer_mb", ledger[5] / 1048576.0)
      .str("resumed_from", in.resumed_from)
      .str("data", in.data).str("checkpoint_dir", in.checkpoint_dir).str("precision", cfg_.train.precision)
      .str("grad_reduce_dtype", cfg_.parallel.grad_reduce_dtype)
      .integer("skipped_steps", in.skipped).str("layout", cfg_.parallel.layout)
      .raw("bad_steps", JsonObject().str("policy", in.nonfinite_policy).integer("bad", in.bad_steps.bad)
                            .integer("skipped", in.bad_steps.skipped).integer("rollbacks", in.bad_steps.rollbacks)
                            .integer("spikes", in.bad_steps.spikes).dump());
  add_feature_fields(j, in, mfu);
  if (in.extensions)
    for (const TrainExtension* e : *in.extensions) e->report(j);  // the loss scale, the sparse FLOP ledger, ...
  io::write_file_atomic(cfg_.output.dir + "/summary.json", j.dump() + "\n");
}

// The summary's fields of the features a run may have on: energy, the sgemm MFU, the auto layout, the DP wire,
// stragglers and adaptation (the extensions' own, 2:4 sparsity's, come from TrainExtension::report).
void RunReport::add_feature_fields(JsonObject& j, const RunSummaryInputs& in, double mfu) const {
  const std::vector<StepStats>& h = *in.history;
  // Energy over this invocation's steps, warm-up included (every joule was spent); "n/a (no counter: ...)" where
  // some rank had none: never an estimate.
  double joules = 0;
  for (const StepStats& s : h) joules = (joules < 0 || s.energy_j < 0) ? -1.0 : joules + s.energy_j;
  j.str("energy_source", energy_->source());
  if (!h.empty() && joules >= 0)
    j.num("energy_j", joules).num("joules_per_step", joules / double(h.size()))
        .num("joules_per_token", joules / (tokens_per_step_ * double(h.size())));
  if (sgemm_gflops_ > 0) j.num("mfu_sgemm", mfu_sgemm(mfu)).num("sgemm_gflops_per_rank", sgemm_gflops_);
  if (cfg_.choices().layout == LayoutMode::Auto)
    j.str("layout_choice", cfg_.parallel.auto_choice).str("layout_runner_up", cfg_.parallel.auto_runner_up)
        .str("layout_cluster", cfg_.parallel.auto_cluster);
  if (!h.empty() && h.back().wire_bytes >= 0) {  // the DP gradient reduction: means over this invocation's steps
    double bytes = 0, ratio = 0;
    for (const StepStats& s : h) bytes += s.wire_bytes, ratio += s.compression_ratio;
    j.num("wire_bytes_per_step", bytes / double(h.size())).num("compression_ratio", ratio / double(h.size()));
    if (h.back().residual_norm >= 0) j.num("residual_norm", h.back().residual_norm);
  }
  if (!h.empty() && h.back().straggler_monitored)
    j.raw("straggler_steps_per_rank", int_list(straggler_steps_per_rank(h, grid_.world_size())));
  if (!in.adapt_decisions_json.empty()) j.raw("adapt_decisions", in.adapt_decisions_json);
}

}  // namespace gt
