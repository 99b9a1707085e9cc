#include "src/plan/planner.hpp"

#include <algorithm>
#include <cstdio>

#include "src/core/error.hpp"

namespace gt::plan {

namespace {
std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes >= 1e8 ? "%.1f GB" : "%.2g GB", bytes / 1e9);  // small models: 2 digits
  return buf;
}
std::string num(long v) { return std::to_string(v); }
}  // namespace

std::string structural_problem(const ModelShape& m, const Cluster& c, const Layout& l, const PlanOptions& o) {
  if (m.a % l.tp != 0) return "tp " + num(l.tp) + " does not divide the " + num(m.a) + " heads";
  if (o.framework == Framework::Gridtrain && m.V % l.tp != 0)
    return "tp " + num(l.tp) + " does not divide the vocabulary " + num(m.V) + " (gridtrain does not pad it)";
  if (m.L < l.pp) return "pp " + num(l.pp) + " is more than the " + num(m.L) + " blocks";
  if (o.framework == Framework::Megatron && m.L % l.pp != 0)
    return "pp " + num(l.pp) + " does not divide the " + num(m.L) + " layers (Megatron)";
  if (!o.tp_across_nodes && l.tp > c.devices_per_node)
    return "tp " + num(l.tp) + " spans nodes (" + num(c.devices_per_node) + " devices per node)";
  if (l.zero > 0 && l.dp == 1) return "ZeRO stage " + num(l.zero) + " with dp 1 shards nothing (same as zero 0)";
  return "";
}

Plan make_plan(const ModelShape& m, const Cluster& c, const PlanOptions& o) {
  if (o.devices < 1 || o.devices > (1 << 20)) throw Error("plan: --devices must be 1 to 1048576");
  if (o.global_batch < 1 && o.fixed_micro_batches < 1) throw Error("plan: --global-batch must be at least 1");
  if (m.L < 1 || m.h < 1 || m.a < 1 || m.s < 1 || m.V < 1) throw Error("plan: the model has a zero dimension");
  Plan plan;
  auto reject = [&](const Layout& l, std::string why) {
    Candidate r;
    r.layout = l;
    r.reason = std::move(why);
    plan.rejected.push_back(std::move(r));
  };
  for (int tp = 1; tp <= o.devices; ++tp) {
    if (o.devices % tp || (o.tp > 0 && tp != o.tp)) continue;
    for (int pp = 1; pp <= o.devices / tp; ++pp) {
      if ((o.devices / tp) % pp || (o.pp > 0 && pp != o.pp)) continue;
      Layout base;
      base.tp = tp;
      base.pp = pp;
      base.dp = o.devices / (tp * pp);
      base.gpipe = o.gpipe;
      base.device_split = c.gpu;
      base.sequence_parallel = o.framework == Framework::Megatron && tp > 1;
      // Micro-batch sizes and counts: b x m x dp = global batch (or m fixed and the batch follows).
      std::vector<std::pair<int, int>> bm;
      if (o.fixed_micro_batches > 0) {
        for (int b : o.micro_batch_sizes) bm.push_back({b, o.fixed_micro_batches});
      } else if (o.global_batch % base.dp != 0) {
        reject(base, "global batch " + num(o.global_batch) + " is not divisible by dp " + num(base.dp));
        continue;
      } else {
        const long per_rank = o.global_batch / base.dp;
        for (long b = 1; b <= per_rank && b <= o.max_micro_batch; ++b) {
          if (per_rank % b) continue;
          if (!o.micro_batch_sizes.empty() &&
              std::find(o.micro_batch_sizes.begin(), o.micro_batch_sizes.end(), int(b)) == o.micro_batch_sizes.end())
            continue;
          bm.push_back({int(b), int(per_rank / b)});
        }
        if (bm.empty()) {  // say so, rather than leave the layout out without a reason
          reject(base, "no micro-batch size asked for divides the per-rank batch " + num(per_rank));
          continue;
        }
      }
      for (auto [b, mb] : bm)
        for (Precision p : o.precisions)
          for (int z : o.zero_stages)
            for (Recompute rc : o.recomputes) {
              Layout l = base;
              l.micro_batch = b;
              l.micro_batches = mb;
              l.precision = p;
              l.zero = z;
              l.recompute = rc;
              if (std::string why = structural_problem(m, c, l, o); !why.empty()) {
                reject(l, why);
                continue;
              }
              Candidate cand;
              cand.layout = l;
              cand.memory = peak_memory(m, l, o.framework);
              cand.time = step_time(m, l, c, o.framework);
              if (cand.memory.total() > c.usable_memory_bytes()) {
                cand.reason = "needs " + gb(cand.memory.total()) + " on stage " + num(cand.memory.stage) + " > " +
                              gb(c.usable_memory_bytes()) + " usable (states " + gb(cand.memory.states()) +
                              ", activations " + gb(cand.memory.activations) + ")";
                plan.rejected.push_back(cand);
                continue;
              }
              cand.fits = true;
              plan.fits.push_back(cand);
            }
    }
  }
  std::stable_sort(plan.fits.begin(), plan.fits.end(), [](const Candidate& x, const Candidate& y) {
    if (x.time.tokens_per_s != y.time.tokens_per_s) return x.time.tokens_per_s > y.time.tokens_per_s;
    return x.memory.total() < y.memory.total();
  });
  return plan;
}

}  // namespace gt::plan

namespace gt::plan {

std::string rejection_summary(const Plan& p, int reasons) {
  const Candidate* closest = nullptr;  // memory is only set for layouts the model ran on
  for (const Candidate& r : p.rejected)
    if (r.memory.total() > 0 && (!closest || r.memory.total() < closest->memory.total())) closest = &r;
  if (!closest && !p.rejected.empty()) closest = &p.rejected.front();
  std::string out = std::to_string(p.rejected.size()) + " rejected";
  if (!closest) return out;
  out += "; closest: " + closest->layout.str() + ": " + closest->reason;
  // Then the structural reasons, each distinct text once (e.g. "tp 4 does not divide the 6 heads").
  std::vector<std::string> shown{closest->reason};
  for (const Candidate& r : p.rejected) {
    if (int(shown.size()) >= reasons) break;
    if (r.memory.total() > 0) continue;  // memory reasons: the closest one says it
    if (std::find(shown.begin(), shown.end(), r.reason) != shown.end()) continue;
    shown.push_back(r.reason);
    out += "; " + r.layout.str() + ": " + r.reason;
  }
  return out;
}

AutoChoice choose_layout(const ModelShape& m, const Cluster& c, int world, int micro_batch, int micro_batches,
                         int tp, int pp) {
  PlanOptions o;
  o.devices = world;
  o.framework = Framework::Gridtrain;
  o.precisions = {Precision::FP32};
  o.zero_stages = {0};
  o.recomputes = {Recompute::None};
  o.micro_batch_sizes = {micro_batch};
  o.fixed_micro_batches = micro_batches;
  o.tp = tp;
  o.pp = pp;
  o.tp_across_nodes = true;  // a world smaller than a node description must still get a layout
  const Plan p = make_plan(m, c, o);
  if (p.fits.empty())
    throw Error("parallel.layout = auto: no layout of " + std::to_string(world) + " ranks fits on " + c.name + " (" +
                rejection_summary(p) + ")");
  AutoChoice a;
  a.best = p.fits[0];
  if (p.fits.size() > 1) {
    a.has_runner_up = true;
    a.runner_up = p.fits[1];
  }
  return a;
}

}  // namespace gt::plan
