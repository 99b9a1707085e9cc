#include "src/plan/planner.hpp"

#include <algorithm>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/plan/framework.hpp"

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
  const FrameworkTraits& tr = traits(o.framework);
  const std::string fw = name(o.framework);
  if (m.a % l.tp != 0) return "tp " + num(l.tp) + " does not divide the " + num(m.a) + " heads";
  if (m.kv_heads() % l.tp != 0 && l.tp % m.kv_heads() != 0)  // a multiple replicates each head (Megatron)
    return "tp " + num(l.tp) + " neither divides the " + num(m.kv_heads()) + " key/value heads nor is a multiple of them";
  if (o.framework == Framework::Gridtrain && m.V % l.tp != 0)
    return "tp " + num(l.tp) + " does not divide the vocabulary " + num(m.V) + " (gridtrain does not pad it)";
  if (o.framework == Framework::Gridtrain && l.sequence_parallel && l.tp > 1 && m.s % l.tp != 0)
    return "tp " + num(l.tp) + " does not divide the sequence " + num(m.s) + " (gridtrain's sequence parallelism)";
  if (o.framework == Framework::Gridtrain && m.llama() && attention_of(m, o.framework) != Attention::Fused)
    return "gridtrain's Llama blocks run only the fused attention (model.attention = fused)";
  if (!tr.tensor_pipeline && (l.tp > 1 || l.pp > 1)) return fw + " has no tensor or pipeline parallelism";
  if (m.L < l.pp) return "pp " + num(l.pp) + " is more than the " + num(m.L) + " blocks";
  if (tr.even_layers && m.L % l.pp != 0)
    return "pp " + num(l.pp) + " does not divide the " + num(m.L) + " layers (Megatron)";
  if (l.cp > 1 && !tr.context_parallel) return fw + " has no context parallelism";
  if (l.cp > 1 && m.s % (2 * l.cp) != 0)
    return "cp " + num(l.cp) + ": the sequence " + num(m.s) + " does not split into 2 cp chunks (causal balance)";
  if (l.vp > 1) {
    if (!tr.interleaving) return fw + " has no interleaved schedule";
    if (l.pp < 2) return "virtual stages need pp > 1";
    if (l.gpipe) return "interleaving is a 1F1B schedule (not with --gpipe)";
    if (m.L % (long(l.pp) * l.vp) != 0)
      return "pp " + num(l.pp) + " x v " + num(l.vp) + " does not divide the " + num(m.L) + " layers";
    if (l.micro_batches % l.pp != 0)
      return "interleaving needs the micro-batches (" + num(l.micro_batches) + ") a multiple of pp " + num(l.pp);
  }
  if (l.precision == Precision::FP8 && !(c.peak_tflops_fp8 > 0))
    return "fp8: the cluster description has no device.peak_tflops_fp8";
  if (l.precision == Precision::FP8 && !tr.fp8) return fw + " has no fp8 GEMMs";
  if (l.zero < tr.zero_min || l.zero > tr.zero_max)
    return fw + " has no ZeRO stage " + num(l.zero) + " (stages " + num(tr.zero_min) + "-" + num(tr.zero_max) + ")";
  if (!o.tp_across_nodes && l.tp > c.devices_per_node)
    return "tp " + num(l.tp) + " spans nodes (" + num(c.devices_per_node) + " devices per node)";
  if (l.zero > 0 && l.shard_group() == 1 && tr.zero_min == 0)
    return "ZeRO stage " + num(l.zero) + " with dp 1 shards nothing (same as zero 0)";
  return "";
}

namespace {

// The virtual-stage counts to try for pp stages: the asked ones, or 1 and (a framework that interleaves, from
// Megatron-Core on) every v > 1 that divides the layers per stage.
std::vector<int> virtual_stage_choices(const ModelShape& m, int pp, const PlanOptions& o) {
  if (!o.virtual_stages.empty()) return o.virtual_stages;
  std::vector<int> v{1};
  const Framework f = o.framework;
  // gridtrain only when asked: its layout = auto does not set parallel.virtual_stages, and its ledger counts 1F1B's
  // activations
  if (pp < 2 || !traits(f).interleaving || f == Framework::Megatron || f == Framework::Gridtrain || m.L % pp != 0)
    return v;
  for (long k = 2; k <= m.L / pp && k <= 64; ++k)
    if ((m.L / pp) % k == 0) v.push_back(int(k));
  return v;
}

std::vector<int> zero_choices(const PlanOptions& o) {
  if (!o.zero_stages.empty()) return o.zero_stages;
  std::vector<int> z;
  for (int k = traits(o.framework).zero_min; k <= traits(o.framework).zero_max; ++k) z.push_back(k);
  return z;
}

// Micro-batch (size, count) pairs for a layout with dp replicas: b x m x dp = the global batch, or m fixed and the
// batch follows. Empty with *why set when none is possible.
std::vector<std::pair<int, int>> micro_batch_choices(const PlanOptions& o, int dp, std::string* why) {
  std::vector<std::pair<int, int>> bm;
  if (o.fixed_micro_batches > 0) {
    for (int b : o.micro_batch_sizes) bm.push_back({b, o.fixed_micro_batches});
    return bm;
  }
  if (o.global_batch % dp != 0) {
    *why = "global batch " + num(o.global_batch) + " is not divisible by dp " + num(dp);
    return bm;
  }
  const long per_rank = o.global_batch / dp;
  for (long b = 1; b <= per_rank && b <= o.max_micro_batch; ++b) {
    if (per_rank % b) continue;
    if (!o.micro_batch_sizes.empty() &&
        std::find(o.micro_batch_sizes.begin(), o.micro_batch_sizes.end(), int(b)) == o.micro_batch_sizes.end())
      continue;
    bm.push_back({int(b), int(per_rank / b)});
  }
  if (bm.empty()) *why = "no micro-batch size asked for divides the per-rank batch " + num(per_rank);
  return bm;
}

// One structurally valid layout: its memory and step time, and whether it fits the devices (the reason when not).
Candidate evaluate(const ModelShape& m, const Cluster& c, const Layout& l, Framework f, const std::vector<int>& begin,
                   const TimeOptions& topt) {
  Candidate cand;
  cand.layout = l;
  cand.memory = peak_memory(m, l, f, begin);
  cand.time = step_time(m, l, c, f, begin, topt);
  if (cand.memory.total() > c.usable_memory_bytes()) {
    cand.reason = "needs " + gb(cand.memory.total()) + " on stage " + num(cand.memory.stage) + " > " +
                  gb(c.usable_memory_bytes()) + " usable (states " + gb(cand.memory.states()) + ", activations " +
                  gb(cand.memory.activations) + ")";
    return cand;
  }
  cand.fits = true;
  return cand;
}

}  // namespace

Plan make_plan(const ModelShape& m, const Cluster& c, const PlanOptions& o) {
  if (o.devices < 1 || o.devices > (1 << 20)) throw Error("plan: --devices must be 1 to 1048576");
  if (o.global_batch < 1 && o.fixed_micro_batches < 1) throw Error("plan: --global-batch must be at least 1");
  if (m.L < 1 || m.h < 1 || m.a < 1 || m.s < 1 || m.V < 1) throw Error("plan: the model has a zero dimension");
  check_model_shape(m);
  Plan plan;
  auto reject = [&](const Layout& l, std::string why) {
    Candidate r;
    r.layout = l;
    r.reason = std::move(why);
    plan.rejected.push_back(std::move(r));
  };
  if (o.cp < 1 || o.devices % o.cp != 0) throw Error("plan: --cp must divide the devices");
  const int rest = o.devices / o.cp;  // tp x pp x dp
  TimeOptions topt;
  topt.tp_overlap = o.tp_overlap;
  const std::vector<int> zeros = zero_choices(o);
  for (int tp = 1; tp <= rest; ++tp) {
    if (rest % tp || (o.tp > 0 && tp != o.tp)) continue;
    for (int pp = 1; pp <= rest / tp; ++pp) {
      if ((rest / tp) % pp || (o.pp > 0 && pp != o.pp)) continue;
      Layout base;
      base.tp = tp;
      base.pp = pp;
      base.cp = o.cp;
      base.dp = rest / (tp * pp);
      base.gpipe = o.gpipe;
      base.device_split = c.gpu;
      const bool sp = o.sequence_parallel < 0 ? traits(o.framework).sequence_parallel : o.sequence_parallel > 0;
      base.sequence_parallel = sp && tp > 1;
      std::string why;
      const std::vector<std::pair<int, int>> bm = micro_batch_choices(o, base.dp, &why);
      if (bm.empty()) {  // say so, rather than leave the layout out without a reason
        reject(base, why);
        continue;
      }
      // The stage split depends on pp alone: computed once here, not once per candidate (a cost-balanced split is
      // O(pp L^2)).
      std::vector<int> begin;
      if (pp <= m.L) begin = stage_blocks(m, pp, o.framework);
      for (int v : virtual_stage_choices(m, pp, o))
        for (auto [b, mb] : bm)
          for (Precision p : o.precisions)
            for (int z : zeros)
              for (Recompute rc : o.recomputes) {
                Layout l = base;
                l.vp = v;
                l.micro_batch = b;
                l.micro_batches = mb;
                l.precision = p;
                l.zero = z;
                l.recompute = rc;
                if (std::string why = structural_problem(m, c, l, o); !why.empty()) {
                  reject(l, why);
                  continue;
                }
                Candidate cand = evaluate(m, c, l, o.framework, begin, topt);
                (cand.fits ? plan.fits : plan.rejected).push_back(std::move(cand));
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
                         int tp, int pp, bool sequence_parallel) {
  PlanOptions o;
  o.sequence_parallel = sequence_parallel ? 1 : 0;
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
