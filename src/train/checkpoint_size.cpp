#include "src/train/checkpoint_size.hpp"

#include "src/train/families/model_families.hpp"
#include "src/train/extensions/sparsity.hpp"

namespace gt {

io::CheckpointFileShape checkpoint_file_shape(const Config& cfg, int world_size) {
  io::CheckpointFileShape shape;
  const ModelConfig& m = cfg.model;
  const ConfigChoices choice = cfg.choices();
  int64_t model_elements = 0;
  for (const TensorSpec& s : make_model_family(m)->global_specs()) {
    const int64_t n = s.global_size();
    model_elements += n;
    for (int group = 0; group < 3; ++group) shape.dataset_elements.push_back(n);  // params, adam_m, adam_v
    if (choice.sparsity != SparsityPattern::None && sparse_tensor(s)) shape.dataset_elements.push_back(n);
  }
  // the model's buffers (BatchNorm's running statistics: 2 x channels per layer) and the rest are small: the
  // attribute allowance covers them
  if (choice.compress == CompressMethod::TopK) shape.dataset_elements.push_back(int64_t(world_size) * model_elements);
  shape.attribute_bytes = int64_t(cfg.to_toml().size()) + 4096;
  return shape;
}

}  // namespace gt
