#pragma once
// ResNet (src/vision/resnet.hpp) as the second model family of the seam (src/model/model_family.hpp), for
// model.kind = resnet: the preset model.resnet on model.image_size x model.image_size x model.image_channels images
// and model.classes classes. One loss per image; its tensors in global shapes (conv O x KH x KW x I, BatchNorm C,
// classifier classes x features) with units stem 0, block i at i + 1 and the classifier last (the DP buckets and
// ZeRO-1 shards follow them); images from src/data/image_source.hpp. What it cannot run with (tensor and
// pipeline parallelism, ZeRO 2/3, 16-bit precisions, recompute, top-k, the adapt and rebalance modes) is in the
// compatibility table (src/core/features.cpp), one line each. 2:4 sparsity masks every convolution whose input
// channels come in groups of 4 (TensorSpec::sparse24; not a 1- or 3-channel stem).
#include "src/model/model_family.hpp"
#include "src/vision/resnet.hpp"

namespace gt {

class ResNetFamily final : public ModelFamily {
 public:
  explicit ResNetFamily(const ModelConfig& m);
  std::string signature() const override;
  int positions_per_sample() const override { return 1; }
  const char* position_name() const override { return "image"; }
  double train_flops_per_position() const override { return flops_; }
  int blocks() const override { return blocks_; }
  std::vector<TensorSpec> tensor_specs(const StageLayout& chunk, int tp_rank, int tp_size) const override;
  std::unique_ptr<StageModel> make_stage(const StageBuild& b) const override;
  std::unique_ptr<DataSource> make_source(const Config& cfg) const override;
  void check(const Config& cfg, const GridShape& grid) const override;

 private:
  ModelConfig m_;
  vision::ResNetConfig net_;
  std::vector<TensorSpec> specs_;  // the whole model
  int blocks_ = 0;
  double flops_ = 0;
};

}  // namespace gt
