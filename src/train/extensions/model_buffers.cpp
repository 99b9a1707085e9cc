#include "src/train/extensions/model_buffers.hpp"

namespace gt {

std::vector<TensorShard> ModelBuffers::datasets(ExtensionIo&) {
  std::vector<TensorShard> out;
  for (const ModelBuffer& b : buffers_) {
    const int64_t n = int64_t(b.size);
    TensorShard t;
    t.name = "buffers/" + b.name;
    t.global_shape = {n};
    t.start = {0};
    t.count = {n};
    t.data = b.data;
    t.writer = grid_.dp_rank() == 0;  // one copy; every rank reads it back
    out.push_back(std::move(t));
  }
  return out;
}

void ModelBuffers::before_validation() {
  if (grid_.shape().dp == 1) return;
  for (const ModelBuffer& b : buffers_) grid_.dp().broadcast(b.data, b.size, DType::F32, 0);
}

}  // namespace gt
