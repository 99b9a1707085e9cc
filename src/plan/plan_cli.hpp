#pragma once
// `gridtrain plan`: the command line of the planner (plan a model on a cluster, or calibrate a description
// from finished runs). Throws gt::Error with one line on any bad input.
#include <string>
#include <vector>

namespace gt::plan {

extern const char* kPlanUsage;
int plan_main(const std::vector<std::string>& args);

// inputs/clusters/NAME.toml for a bare name, the argument itself for a path.
std::string resolve_cluster(const std::string& name_or_path);

}  // namespace gt::plan
