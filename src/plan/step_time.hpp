#pragma once
// Step time of a layout on a cluster: compute (per-GEMM efficiency, attention materialized or fused, element-wise
// kernels at memory bandwidth), communication (alpha-beta ring collectives per link level: TP, CP, PP, DP), what
// of it each framework hides behind which compute (framework.hpp), the pipeline bubble (p - 1) / (v m), the
// optimizer, fixed overheads; tokens/s and MFU. Formulas and sources: docs/planner.md.
#include <vector>

#include "src/plan/cluster.hpp"
#include "src/plan/layout.hpp"

namespace gt::plan {

struct TimeBreakdown {
  double compute = 0;   // s: forward + backward (+ recompute) of every micro-batch on the slowest stage
  double tp = 0, cp = 0, pp = 0, dp = 0;  // s: exposed communication on the critical path
  double dp_total = 0;  // s: the DP traffic whether hidden or not
  double bubble = 0;    // s: (p - 1) / v micro-batch slots of the slowest stage
  double optimizer = 0, overhead = 0;
  double step = 0;      // s
  double tokens_per_s = 0, mfu = 0;
  double comm_share() const { return step > 0 ? (tp + cp + pp + dp) / step : 0; }
};

// Ring collectives over k ranks on one link level, n bytes (the whole buffer).
double allreduce_seconds(double n, int k, const LinkLevel& link);
double allgather_seconds(double n, int k, const LinkLevel& link);  // = reduce-scatter
double p2p_seconds(double n, const LinkLevel& link);

// The link a group of `size` ranks placed `stride` apart uses (ranks are numbered tp fastest, then cp, then dp,
// then pp, as src/grid/grid.hpp and Megatron place them): the node's link when the group fits in one node,
// otherwise the network, whose per-device bandwidth adds up over the group's ranks in one node.
LinkLevel group_link(const Cluster& c, int stride, int size);

// Model FLOPs of one step (Narayanan et al. 2021, eq. 3 without recompute, generalised as Megatron-Core's
// num_floating_point_operations): 3 B s (2 (L P_gemm + V h) + 4 L s h), P_gemm a block's GEMM weights;
// 72 B s L h^2 (1 + s/6h + V/12Lh) for GPT-2.
// Through src/core/model_flops.hpp, the count the run report uses.
double model_flops_per_step(const ModelShape& m, long global_batch);

// Options that override a framework's default for one plan (-1: the framework's own).
struct TimeOptions {
  int tp_overlap = -1;
};

TimeBreakdown step_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f);
TimeBreakdown step_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f,
                        const std::vector<int>& stage_begin, const TimeOptions& opt);

}  // namespace gt::plan
