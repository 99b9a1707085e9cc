#include "src/plan/layout.hpp"

#include "src/core/error.hpp"

namespace gt::plan {

std::string name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
  }
  return "?";
}

std::string name(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

std::string name(Framework f) { return f == Framework::Gridtrain ? "gridtrain" : "megatron"; }

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  throw Error("unknown precision '" + s + "' (fp32, bf16, fp16)");
}

Recompute parse_recompute(const std::string& s) {
  if (s == "none") return Recompute::None;
  if (s == "selective") return Recompute::Selective;
  if (s == "full") return Recompute::Full;
  throw Error("unknown recompute '" + s + "' (none, selective, full)");
}

Framework parse_framework(const std::string& s) {
  if (s == "gridtrain") return Framework::Gridtrain;
  if (s == "megatron") return Framework::Megatron;
  throw Error("unknown framework '" + s + "' (gridtrain, megatron)");
}

std::string Layout::str() const {
  return "tp" + std::to_string(tp) + " pp" + std::to_string(pp) + " dp" + std::to_string(dp) + " b" +
         std::to_string(micro_batch) + " m" + std::to_string(micro_batches) + " zero" + std::to_string(zero) + " " +
         name(precision) + " rc=" + name(recompute) + (sequence_parallel ? " sp" : "") + (gpipe ? " gpipe" : "");
}

}  // namespace gt::plan
