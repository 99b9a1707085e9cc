#include "src/train/adapt/state_handoff.hpp"

#include <algorithm>
#include <map>

#include "src/core/error.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/stage_chunks.hpp"

namespace gt {

void scatter_global(TrainState& state, Buffer buffer, const GlobalTensors& tensors, MirrorMode mode) {
  std::map<std::string, const std::vector<float>*> by_name;
  for (const auto& [name, values] : tensors) by_name[name] = &values;
  StateBuffer& b = state.buffer(buffer);
  HostMirror<float> mirror(state.data<float>(buffer), b.extent.size(), mode);
  mirror.pull();  // elements of no tensor (ZeRO's padding) keep their values
  float* local = mirror.data();
  for (const TensorSpec& s : state.layout().tensors()) {
    const auto it = by_name.find(s.name);
    if (it == by_name.end() || int64_t(it->second->size()) != s.global_size())
      throw Error("adapt: the handed-over state has no tensor '" + s.name + "' of " +
                  std::to_string(s.global_size()) + " elements");
    // The tensor's elements inside the buffer's extent (a ZeRO shard may cut it anywhere).
    const size_t from = std::max(s.offset, b.extent.begin), to = std::min(s.offset + s.size, b.extent.end);
    const std::vector<float>& global = *it->second;
    for (size_t i = from; i < to; ++i)
      local[i - b.extent.begin] = global[size_t(s.global_index(int64_t(i - s.offset)))];
  }
  mirror.push();
}

std::set<std::string> tensors_of_stage(const Config& cfg, int pp, int stage, const std::vector<int>& partition,
                                       int tp_rank, int tp_size) {
  std::set<std::string> names;
  for (const TensorSpec& s : stage_tensor_specs(cfg.model, stage_chunks(cfg, pp, stage, partition), tp_rank, tp_size))
    names.insert(s.name);
  return names;
}

void keep_only(GlobalTensors* tensors, const std::set<std::string>& names) {
  GlobalTensors kept;
  for (auto& t : *tensors)
    if (names.count(t.first)) kept.push_back(std::move(t));
  *tensors = std::move(kept);
}

}  // namespace gt
