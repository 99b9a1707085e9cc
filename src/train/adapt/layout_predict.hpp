#pragma once
// parallel.adapt = full (docs/adaptive.md, "Live re-layout"): the planner fed with this run's own figures. The
// window's medians (layout_decider.hpp) become one plan::RunSample of the current layout; plan::calibrate fits
// the base cluster description to it (GEMM and memory efficiency, the node link, the step overhead, as
// `gridtrain plan --calibrate` does from finished runs); plan::step_time then predicts every layout of the world
// (tp, pp, dp, ZeRO stage, micro-batch size: layout_choices) that this run's configuration can continue on
// (relaid_config) and whose predicted memory fits, the current layout included, so that the decider compares
// prediction with prediction.
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/plan/cluster.hpp"
#include "src/plan/layout.hpp"
#include "src/train/adapt/layout_decider.hpp"
#include "src/train/report/step_stats.hpp"

namespace gt {

// The base description the calibration starts from: parallel.cluster when set (layout = auto), else cpu-2core,
// the default of `gridtrain plan --calibrate` (the calibration refits what differs between machines; the peaks
// only set the scale of the fitted efficiencies). Throws gt::Error naming the description when it cannot be read.
plan::Cluster layout_base_cluster(const Config& cfg);

// The figures one step gives the calibration, from the world-reduced StepStats (the same on every rank): the
// step of the slowest rank; the optimizer's own time (less the waits in it); the critical (slowest-computing)
// rank's forward and backward, its compute less the optimizer and the data wait; the exposed TP time and the DP time the critical rank was blocked (the means over
// ranks include the faster ranks' waiting for the slowest, which is imbalance, not link time).
LayoutSample layout_sample(const StepStats& s);

// The planner's layout of this run's configuration on `g` (what the trainer would run there).
plan::Layout plan_layout(const Config& cfg, const GridShape& g);

// The candidates: every (tp, pp, dp) of the world's size, each with every ZeRO stage (only 0 at dp = 1: nothing to
// shard) and the micro-batch sizes half, equal and twice the current one that keep the global batch (`samples`
// sequences) in whole micro-batches per replica; the current first, then in a fixed order (ties go alike on every
// rank). Whether the configuration can run each is relaid_config's question, asked by predict_layouts.
std::vector<LayoutChoice> layout_choices(const LayoutChoice& now, int samples);

// Every layout's predicted step (ms), the current first: of layout_choices those relaid_config accepts and whose
// predicted memory per rank fits (no more than the current layout's, or the base description's usable memory), and
// of each grid and micro-batch size only the lowest ZeRO stage that fits (ZeRO is for memory; the current grid and
// micro-batch size keep the current stage). `notes` gets the calibration's notes. Throws gt::Error
// when the calibration fails (figures the model cannot fit). Applies the test hook test_hooks::layout_predict_factors().
std::vector<LayoutPrediction> predict_layouts(const Config& cfg, const LayoutChoice& now, const LayoutSample& median,
                                              const plan::Cluster& base, std::vector<std::string>* notes);

}  // namespace gt
