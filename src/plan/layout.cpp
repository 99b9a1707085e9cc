#include "src/plan/layout.hpp"

#include "src/core/error.hpp"

namespace gt::plan {

std::string name(Precision p) { return enum_name(p); }

std::string name(Recompute r) { return enum_name(r); }

std::string name(Framework f) { return f == Framework::Gridtrain ? "gridtrain" : "megatron"; }

Precision parse_precision(const std::string& s) {
  Precision p;
  if (!parse_enum(s, p)) throw Error("unknown precision '" + s + "' (fp32, bf16, fp16)");
  return p;
}

Recompute parse_recompute(const std::string& s) {
  Recompute r;
  if (!parse_enum(s, r)) throw Error("unknown recompute '" + s + "' (none, selective, full)");
  return r;
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
