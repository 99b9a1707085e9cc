#pragma once
// `gridtrain plan`: the command line of the planner (plan a model on a cluster, or calibrate a description
// from finished runs). Throws gt::Error with one line on any bad input, naming the value and why.
#include <string>
#include <vector>

#include "src/plan/planner.hpp"

namespace gt::plan {

extern const char* kPlanUsage;
int plan_main(const std::vector<std::string>& args);

// inputs/clusters/NAME.toml for a bare name, the argument itself for a path.
std::string resolve_cluster(const std::string& name_or_path);

// The parsed command line. Integers are range-checked as they are read (no value is truncated or wraps);
// the checks that need the model or the device count together come in check_plan_request.
struct PlanArgs {
  std::string deck, cluster, plot, out, allreduce_algo = "shm-reg";
  std::vector<std::string> overrides;   // section.key=value, applied to the deck
  std::vector<std::string> calib_args;  // --calibrate: run directories and figures files
  bool json = false, calibrating = false;
  int top = 15;
  PlanOptions o;
};
PlanArgs parse_plan_args(const std::vector<std::string>& args);

// The model to plan: the deck with the overrides applied, and the planner's own model keys (model.arch,
// model.ffn_hidden, model.n_kv_head, model.attention, model.tie_embeddings: Llama shapes the engine does not have
// yet) taken from the overrides. Throws gt::Error naming a bad key or value.
ModelShape plan_model(Config& cfg, const std::vector<std::string>& overrides);

// Limits of what the planner plans: far above any published run, low enough that no count overflows.
constexpr long kMaxDevices = 1L << 20;       // 1,048,576
constexpr long kMaxGlobalBatch = 1L << 30;   // sequences per step
constexpr long kMaxMicroBatch = 1L << 16;

// The request as a whole: the fixed degrees against the device count, the micro-batch sizes against the
// per-rank batches, the model within the planner's limits. Throws gt::Error naming the value and why.
void check_plan_request(const PlanOptions& o, const ModelShape& m);

}  // namespace gt::plan
