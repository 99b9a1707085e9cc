#pragma once
// The planner's output: a table for people and JSON for tools (and for scripts/plan_plot.py).
#include <string>
#include <vector>

#include "src/plan/planner.hpp"

namespace gt::plan {

// Best layout per device count (a predicted scaling curve); devices with no layout that fits are left out.
struct ScalingPoint {
  int devices;
  Candidate best;
};

std::string plan_table(const Plan& p, const ModelShape& m, const Cluster& c, const PlanOptions& o, int top);
std::string plan_json(const Plan& p, const ModelShape& m, const Cluster& c, const PlanOptions& o,
                      const std::vector<ScalingPoint>& scaling);

}  // namespace gt::plan
