#pragma once
// Top-k's error-feedback residuals (compress.method = topk, src/compress) as a TrainExtension: the fp32 buffer
// EfResidual of the rank's layout, and its checkpoint dataset. The residuals are per rank, not a model tensor: one
// dataset of [world size, the largest layout over ranks], row = world rank, each rank writing its own row. They
// are resumed on the same layout only: another layout splits the gradient differently over ranks and buckets, so
// there they start at zero, as 1-bit Adam's do when it resumes on another layout.
#include "src/train/extensions/extension.hpp"

namespace gt {

class TopkResiduals : public TrainExtension {
 public:
  explicit TopkResiduals(TrainState& state);  // adds the zeroed buffer
  float* data() { return state_.data<float>(Buffer::EfResidual); }

  std::vector<Buffer> buffers() const override { return {Buffer::EfResidual}; }
  std::vector<TensorShard> datasets(ExtensionIo& io) override;  // collective: agrees the largest layout
  void save_meta(CheckpointMeta& meta) const override;
  bool restores_from(ExtensionIo& io, const CheckpointMeta& meta) override;

 private:
  TrainState& state_;
};

}  // namespace gt
