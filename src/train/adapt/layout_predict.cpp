#include "src/train/adapt/layout_predict.hpp"

#include <algorithm>

#include "src/core/error.hpp"
#include "src/core/test_hooks.hpp"
#include "src/plan/calibrate.hpp"
#include "src/plan/memory.hpp"
#include "src/plan/plan_cli.hpp"
#include "src/plan/step_time.hpp"
#include "src/train/adapt/layout_adapter.hpp"

namespace gt {

// The planner's layout of this run's configuration on `g` (what the trainer would run there).
plan::Layout plan_layout(const Config& cfg, const GridShape& g) {
  const ConfigChoices c = cfg.choices();
  plan::Layout l;
  l.tp = g.tp;
  l.pp = g.pp;
  l.dp = g.dp;
  l.micro_batch = cfg.train.micro_batch_size;
  l.micro_batches = cfg.train.micro_batches;
  l.zero = cfg.parallel.zero;  // with the micro-batch size: a relaid configuration carries the candidate's
  l.precision = c.precision;
  l.recompute = c.recompute;
  l.sequence_parallel = cfg.parallel.sequence_parallel;
  l.gpipe = c.schedule == PipelineSchedule::GPipe;
  l.vp = cfg.pipeline_chunks();
  return l;
}

namespace {

double hook_factor(const LayoutChoice& c) {
  for (const test_hooks::LayoutFactor& f : test_hooks::layout_predict_factors())
    if (f.tp == c.grid.tp && f.pp == c.grid.pp && f.dp == c.grid.dp && (f.zero < 0 || f.zero == c.zero) &&
        (f.micro_batch < 0 || f.micro_batch == c.micro_batch))
      return f.factor;
  return 1.0;
}

}  // namespace

std::vector<LayoutChoice> layout_choices(const LayoutChoice& now, int samples) {
  std::vector<LayoutChoice> out{now};
  const int n = now.grid.size();
  std::vector<int> sizes;
  if (now.micro_batch % 2 == 0) sizes.push_back(now.micro_batch / 2);
  sizes.push_back(now.micro_batch);
  sizes.push_back(now.micro_batch * 2);
  for (int tp = 1; tp <= n; ++tp)
    for (int pp = 1; tp * pp <= n; ++pp) {
      if (n % (tp * pp) != 0) continue;
      const GridShape g{tp, pp, n / (tp * pp)};
      for (int zero = 0; zero <= (g.dp > 1 ? 3 : 0); ++zero)
        for (int mb : sizes) {
          const LayoutChoice c{g, zero, mb};
          if (samples % (mb * g.dp) == 0 && !same_layout(c, now)) out.push_back(c);
        }
    }
  return out;
}

plan::Cluster layout_base_cluster(const Config& cfg) {
  const std::string name = cfg.parallel.cluster.empty() ? "cpu-2core" : cfg.parallel.cluster;
  try {
    return plan::load_cluster(plan::resolve_cluster(name));
  } catch (const Error& e) {
    throw Error(std::string("config: parallel.adapt = \"full\" calibrates the planner from a base description: ") + e.what());
  }
}

LayoutSample layout_sample(const StepStats& s) {
  LayoutSample x;
  x.step_ms = s.ms_max;
  // The optimizer phase's own work: its wall time less what the ranks were blocked in it, the model-parallel
  // gradient-norm reduction (comm_other) where the faster stages wait for the slowest one's backward, and the DP
  // reduction's last wait. With those in, a pipeline with a slow stage measured AdamW at 7-14 ms for 30 MB of state
  // (about 2-4% of the memory's speed) and the element-wise time the fit then predicted exceeded the whole compute:
  // "computed faster than the peak", no calibration (docs/adaptive.md, 2026-12-06). Where the DP wait fell in
  // the backward instead this undercounts: the fit caps the memory efficiency at 1 and keeps the base one for 0.
  x.optimizer_ms = std::max(0.0, s.opt_ms - s.comm_other_ms - s.comm_dp_ms);
  x.compute_ms = std::max(0.0, s.compute_ms_max - x.optimizer_ms - s.data_ms);
  x.tp_ms = s.comm_tp_ms;
  const double blocked = std::max(0.0, s.ms_max - s.compute_ms_max);  // about the critical rank's blocked time
  x.dp_ms = std::min(s.comm_dp_ms, std::max(0.0, blocked - s.comm_tp_ms - s.comm_pp_ms));
  return x;
}

std::vector<LayoutPrediction> predict_layouts(const Config& cfg, const LayoutChoice& now, const LayoutSample& median,
                                              const plan::Cluster& base, std::vector<std::string>* notes) {
  const plan::ModelShape m = plan::ModelShape::from(cfg.model);
  plan::RunSample r;
  r.dir = "this run";
  r.model = m;
  r.layout = plan_layout(cfg, now.grid);
  r.step_ms = median.step_ms;
  r.compute_ms = median.compute_ms;
  r.optimizer_ms = median.optimizer_ms;
  r.tp_ms = median.tp_ms;
  r.dp_ms = now.grid.dp > 1 ? median.dp_ms : -1;
  r.stage_compute = true;
  const plan::Calibration cal = plan::calibrate({r}, base);
  if (notes) *notes = cal.notes;
  // A layout needing no more memory per rank than the one running fits; more: the base description's memory.
  const double here = plan::peak_memory(m, r.layout, plan::Framework::Gridtrain).total();
  const double room = std::max(here, base.usable_memory_bytes());
  std::vector<LayoutPrediction> out;
  out.push_back({now, plan::step_time(m, r.layout, cal.cluster, plan::Framework::Gridtrain).step * 1e3 * hook_factor(now)});
  const int samples = global_samples(cfg);
  // ZeRO is for memory: of each grid and micro-batch size only the lowest stage that fits is a candidate (the
  // choices come in ascending stage), and the current grid and micro-batch size keep the current stage. The
  // planner's step time of a higher stage was lower on this machine's dp 4 (the optimizer sharded) and the run
  // measured it slower (2026-12-06); a stage that lets a grid fit is the use.
  std::vector<LayoutChoice> admitted{now};
  auto has_lower_stage = [&](const LayoutChoice& g) {
    return std::any_of(admitted.begin(), admitted.end(), [&](const LayoutChoice& a) {
      return same_grid(a.grid, g.grid) && a.micro_batch == g.micro_batch;
    });
  };
  for (const LayoutChoice& g : layout_choices(now, samples)) {
    if (has_lower_stage(g)) continue;  // the current among them: predicted above, on its own configuration
    Config relaid;
    try {
      relaid = relaid_config(cfg, g);  // can this run continue there (heads, blocks, global batch, ZeRO)?
    } catch (const Error&) {
      continue;
    }
    const plan::Layout l = plan_layout(relaid, g.grid);
    if (plan::peak_memory(m, l, plan::Framework::Gridtrain).total() > room) continue;
    admitted.push_back(g);
    const double ms = plan::step_time(m, l, cal.cluster, plan::Framework::Gridtrain).step * 1e3;
    out.push_back({g, ms * hook_factor(g)});
  }
  return out;
}

}  // namespace gt
