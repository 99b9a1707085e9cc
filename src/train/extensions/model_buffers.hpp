#pragma once
// The model's buffers (StageModel::model_buffers: BatchNorm's running statistics) as a training extension
// (extension.hpp): saved in checkpoints as "buffers/<name>" from DP rank 0 (every DP rank holds a copy; under
// per-rank BatchNorm they differ, as in PyTorch's DDP without broadcast_buffers, and rank 0's is the one kept),
// read back by every rank, and made equal over the DP group before an evaluation (rank 0's, broadcast: DDP's
// broadcast_buffers at the point where it matters), so the evaluation does not depend on the DP layout.
#include <vector>

#include "src/model/stage_model.hpp"
#include "src/train/extensions/extension.hpp"

namespace gt {

class ModelBuffers final : public TrainExtension {
 public:
  ModelBuffers(std::vector<ModelBuffer> buffers, Grid& grid) : buffers_(std::move(buffers)), grid_(grid) {}
  bool empty() const { return buffers_.empty(); }
  std::vector<Buffer> buffers() const override { return {}; }
  std::vector<TensorShard> datasets(ExtensionIo& io) override;
  void before_validation() override;

 private:
  std::vector<ModelBuffer> buffers_;
  Grid& grid_;
};

}  // namespace gt
