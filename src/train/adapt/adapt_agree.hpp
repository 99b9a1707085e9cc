#pragma once
// What the two live adapters of parallel.adapt = rebalance (the pipeline's, pipeline_adapter.hpp, and the
// data-parallel shares', dp_share_adapter.hpp) and the layout adapter share: the agreement on a decision and the JSON
// list of decisions.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/comm/comm.hpp"

namespace gt {

// Collective over `world`: world rank 0's (move, proposed) becomes every rank's. Every rank computed the same
// decision from the same all-gathered array; the broadcast makes the agreement explicit, so no rank can continue
// on another layout. `proposed` has the same length on every rank.
inline bool agree_with_rank0(Comm& world, bool move, std::vector<int>* proposed) {
  std::vector<int> agreed(proposed->size() + 1);
  agreed[0] = move ? 1 : 0;
  std::copy(proposed->begin(), proposed->end(), agreed.begin() + 1);
  world.broadcast(agreed.data(), agreed.size(), DType::I32, 0);
  proposed->assign(agreed.begin() + 1, agreed.end());
  return agreed[0] != 0;
}

// "[a, b, ...]" with `digits` decimals: the adapters' per-stage and per-replica times, in their log lines and in
// their JSON decisions (a JSON array of numbers).
inline std::string number_list(const std::vector<double>& v, int digits) {
  std::string out = "[";
  char buf[40];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.*f", i ? ", " : "", digits, v[i]);
    out += buf;
  }
  return out + "]";
}

// "[{...}, ...]" from JSON objects.
inline std::string json_list(const std::vector<std::string>& objects) {
  std::string out = "[";
  for (size_t i = 0; i < objects.size(); ++i) out += (i ? ", " : "") + objects[i];
  return out + "]";
}

// The adapters' decisions (JSON objects that begin {"step":N, ...) in step order, the order of the run: under
// parallel.adapt = full the layout decider's and a live rebalancer's come from separate lists. Stable: the
// rebalancer's list first, as in the step.
inline std::vector<std::string> by_step(std::vector<std::string> objects) {
  auto step = [](const std::string& o) {
    const size_t at = o.find("\"step\":");
    return at == std::string::npos ? 0L : std::strtol(o.c_str() + at + 7, nullptr, 10);
  };
  std::stable_sort(objects.begin(), objects.end(),
                   [&](const std::string& a, const std::string& b) { return step(a) < step(b); });
  return objects;
}

}  // namespace gt
