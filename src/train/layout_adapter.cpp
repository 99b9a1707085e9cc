#include "src/train/layout_adapter.hpp"

#include <string>

#include "src/core/error.hpp"
#include "src/core/test_hooks.hpp"

namespace gt {

std::unique_ptr<LayoutAdapter> LayoutAdapter::make(const Config& cfg, const GridShape& now) {
  const test_hooks::Relayout h = test_hooks::relayout();
  if (h.step < 1) return nullptr;
  const GridShape to{h.tp, h.pp, h.dp};
  if (to.size() != now.size())
    throw Error(std::string(test_hooks::kRelayout) + ": tp " + std::to_string(to.tp) + " x pp " + std::to_string(to.pp) + " x dp " +
                std::to_string(to.dp) + " is not the run's " + std::to_string(now.size()) + " ranks");
  relaid_config(cfg, to);  // throws here, at the start, when the run could not continue on it
  return std::unique_ptr<LayoutAdapter>(new LayoutAdapter(h.step, to));
}

std::optional<GridShape> LayoutAdapter::after_step(int step) const {
  if (step != step_) return std::nullopt;
  return to_;
}

Config relaid_config(const Config& now, const GridShape& to) {
  Config c = now;
  const int replicas_micro = now.train.micro_batches * now.parallel.dp;  // the global batch in micro-batches
  if (replicas_micro % to.dp != 0)
    throw Error("adapt: a re-layout to dp = " + std::to_string(to.dp) + " cannot keep the global batch of " +
                std::to_string(replicas_micro) + " micro-batches");
  c.parallel.tp = to.tp;
  c.parallel.pp = to.pp;
  c.parallel.dp = to.dp;
  c.train.micro_batches = replicas_micro / to.dp;
  c.parallel.stage_blocks.clear();
  c.parallel.dp_shares.clear();
  c.validate();
  return c;
}

}  // namespace gt
