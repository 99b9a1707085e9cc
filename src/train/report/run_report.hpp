#pragma once
// What a run reports: the human line per step, metrics.jsonl (one object per step) and summary.json (the
// figures a sweep needs), with tokens/s and MFU against the per-rank peak. Only world rank 0 writes.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/json.hpp"
#include "src/energy/energy_meter.hpp"
#include "src/grid/grid.hpp"
#include "src/model/model_family.hpp"
#include "src/train/extensions/extension.hpp"
#include "src/train/step_guard.hpp"
#include "src/train/report/step_stats.hpp"

namespace gt {

struct RunSummaryInputs {
  std::string status;                      // "finished" | "preempted"
  int step = 0;
  const std::vector<StepStats>* history = nullptr;  // this invocation's steps
  double last_loss = 0;                    // loss of the last step (of an earlier run if none here)
  std::string resumed_from, data, checkpoint_dir;
  size_t state_bytes = 0, activation_bytes = 0;  // the analytic memory ledger of one rank
  int skipped = 0;                         // steps skipped on overflow, over the whole run
  BadStepCounts bad_steps;                 // the bad-step policy's counts, this invocation
  std::string nonfinite_policy;
  // Model-state bytes of this rank by kind (params, grads, optimizer): the ZeRO formula and what the TrainState
  // allocated (src/train/dp/zero.hpp); summary.json gives the largest over ranks.
  double ledger_predicted[3] = {0, 0, 0}, ledger_allocated[3] = {0, 0, 0};
  int zero_stage = 0;
  std::string activation_dtype = "fp32";  // the element type activation_bytes counts (train.precision's)
  std::string adapt_decisions_json;        // parallel.adapt = rebalance: every evaluation of the run ("[...]")
  const std::vector<TrainExtension*>* extensions = nullptr;  // each writes its own fields (TrainExtension::report)
};

class RunReport {
 public:
  // Collective over the world: measures the per-rank peak unless output.peak_gflops gives it. The family gives
  // the throughput unit (tokens or images: the loss positions), the FLOPs per position and the parameter count.
  RunReport(const Config& cfg, Grid& grid, int64_t global_batch, const ModelFamily& family);

  void log_step(int step, const StepStats& s) const;
  // Collective (peak RSS over ranks).
  void write_summary(const RunSummaryInputs& in) const;
  // This rank's joules since the previous call (the step's, called once per step); NaN without a counter.
  double step_energy_j();

 private:
  void add_feature_fields(JsonObject& j, const RunSummaryInputs& in, double mfu) const;  // write_summary's tail
  const Config& cfg_;
  Grid& grid_;
  double tokens_per_step_ = 0;  // loss positions per step: tokens, or images for an image model
  std::string unit_;             // "token" or "image" (ModelFamily::position_name)
  std::string per_s_key_;        // "tokens_per_s" or "images_per_s"
  const char* short_unit() const { return unit_ == "image" ? "img" : "tok"; }
  double peak_gflops_ = 0;   // hardware peak per rank (MFU's denominator)
  std::string peak_kind_;    // which peak: "bf16 peak (avx512_bf16 vdpbf16ps, measured)", a datasheet, ...
  std::string peak_provenance_;  // a measured peak's cache record and this run's figure (host_peak.hpp)
  double sgemm_gflops_ = 0;  // the GEMM backend's measured sgemm rate per rank (mfu_sgemm); 0: not measured
  double mfu_sgemm(double mfu) const { return mfu * peak_gflops_ / sgemm_gflops_; }
  double flops_per_token_ = 0;
  int64_t n_params_ = 0;
  std::unique_ptr<EnergyMeter> energy_;  // RAPL or NVML (src/energy), or none: said on the start line
  double energy_seen_j_ = 0;
  // When training starts (the constructor's end): metrics.jsonl's wall_s, this process's seconds of training
  // including evaluations and data (time to accuracy reads it; a resumed run counts from its own start).
  std::chrono::steady_clock::time_point started_;
};

}  // namespace gt
