#pragma once
// GPT (GPT-2 or Llama blocks: model.arch) as the first model family of the seam (src/model/model_family.hpp):
// the tensors of model_tensor_specs, the stage of make_stage_model (a GPT, or chunks of them under the interleaved
// schedule), token data from make_data_source, seq_len token losses per sequence, and the one FLOPs count of
// src/core/model_flops.hpp.
#include "src/model/model_family.hpp"

namespace gt {

class GptFamily final : public ModelFamily {
 public:
  explicit GptFamily(const ModelConfig& m) : m_(m) {}
  std::string signature() const override;
  int positions_per_sample() const override { return m_.seq_len; }
  const char* position_name() const override { return "token"; }
  double train_flops_per_position() const override;
  int blocks() const override { return m_.n_layer; }
  std::vector<TensorSpec> tensor_specs(const StageLayout& chunk, int tp_rank, int tp_size) const override;
  std::unique_ptr<StageModel> make_stage(const StageBuild& b) const override;
  std::unique_ptr<DataSource> make_source(const Config& cfg) const override;
  void check(const Config&, const GridShape&) const override {}  // the config's and the grid's own checks suffice

 private:
  ModelConfig m_;
};

}  // namespace gt
