#pragma once
// The tensors of the checkpoint seed (make_fuzz_seeds writes them, fuzz_checkpoint loads against them): small
// enough that libFuzzer mutates a file of a few kB, two shapes so that a shape check has something to compare.
#include <string>
#include <vector>

#include "src/io/checkpoint.hpp"

namespace gt::fuzz {

inline const char* kSeedModel = "fuzz-seed n_layer=1";

// Whole-tensor shards (one rank) over buffers held in store, filled with 0.25 * (i + 1).
inline std::vector<TensorShard> seed_shards(std::vector<std::vector<float>>& store) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {{"params/w", {3, 4}}, {"params/b", {5}}};
  store.clear();
  std::vector<TensorShard> shards;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    store.emplace_back(n);
    for (int64_t i = 0; i < n; ++i) store.back()[i] = 0.25f * float(i + 1);
    TensorShard s;
    s.name = name;
    s.global_shape = shape;
    s.start.assign(shape.size(), 0);
    s.count = shape;
    s.data = store.back().data();
    shards.push_back(s);
  }
  return shards;
}

}  // namespace gt::fuzz
