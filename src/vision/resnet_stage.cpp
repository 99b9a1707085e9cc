// The ResNet as one pipeline stage of the trainer (resnet_stage.hpp).
#include "src/vision/resnet_stage.hpp"

#include <cstring>

#include "src/core/error.hpp"

namespace gt::vision {

namespace {
ResNetConfig with_bf16(ResNetConfig c, bool bf16) {
  c.bf16 = bf16;
  return c;
}
}  // namespace

ResNetStage::ResNetStage(const ResNetConfig& cfg, int micro_batch_size, bool bf16)
    : net_(std::make_unique<ResNet>(with_bf16(cfg, bf16))), B_(micro_batch_size), bf16_(bf16) {
  int blocks = 0;
  for (size_t st = 0; st < cfg.widths.size(); ++st) blocks += cfg.blocks_in(st);
  stage_ = StageLayout{0, 1, 0, blocks};
  const long pixels = long(cfg.height) * cfg.width * cfg.channels;
  images_.resize(size_t(B_) * size_t(pixels));
  labels_.resize(size_t(B_));
}

void* ResNetStage::refuse(const char* what) const {
  throw Error(std::string("model.kind = \"resnet\": internal: the ResNet stage has no ") + what);
}

void ResNetStage::bind(void* params, void* grads) {
  grads_ = static_cast<float*>(grads);
  // The network reads the trainer's parameters (bf16: their widened copy) and writes each micro-batch's gradients
  // into its own array (grads(), overwritten per backward), which backward() adds into the bound buffer; its own
  // parameter array is not needed any more.
  if (bf16_) {
    params16_ = static_cast<const uint16_t*>(params);
    params32_.resize(size_t(net_->param_count()));
    net_->bind(params32_.data(), net_->grads().data());
  } else {
    net_->bind(static_cast<float*>(params), net_->grads().data());
  }
  std::vector<float>().swap(net_->params());
}

void ResNetStage::set_samples(int /*slot*/, const int32_t* rows) {
  const ResNetConfig& c = net_->config();
  const size_t pixels = size_t(c.height) * c.width * c.channels;
  for (int b = 0; b < B_; ++b) {
    const int32_t* row = rows + size_t(b) * (pixels + 1);
    std::memcpy(images_.data() + size_t(b) * pixels, row, pixels * sizeof(float));  // fp32 bits (image_source.hpp)
    labels_[size_t(b)] = row[pixels];
  }
}

void ResNetStage::forward(int /*slot*/, bool with_grad, double loss_scale) {
  if (timer_) timer_(stage_.block_begin, true);
  if (params16_)  // the working copy may have changed since the last forward (an optimizer step): widen it again
    for (size_t i = 0; i < params32_.size(); ++i) {
      const uint32_t bits = uint32_t(params16_[i]) << 16;
      std::memcpy(&params32_[i], &bits, sizeof(float));
    }
  // Training forwards use (and update) the batch statistics; evaluations use the running ones.
  const StepResult r = net_->forward(B_, images_.data(), labels_.data(), with_grad);
  if (timer_) timer_(stage_.block_begin, false);
  loss_sum_ += r.loss * B_;
  hits_ += r.correct;
  scale_ = loss_scale;
}

double ResNetStage::take_loss_sum() {
  const double s = loss_sum_;
  loss_sum_ = 0;
  return s;
}

double ResNetStage::take_hits() {
  const double h = hits_;
  hits_ = 0;
  return h;
}

void ResNetStage::backward(int /*slot*/, const std::function<void(int)>& on_unit) {
  if (timer_) timer_(stage_.block_begin, true);
  net_->backward();
  // d(mean of the micro-batch)/dw times B gives the sum over its samples; loss_scale turns that into this
  // micro-batch's share of the global batch's mean (times the loss scale)
  const float w = float(scale_ * B_);
  const std::vector<float>& g = net_->grads();
  for (size_t i = 0; i < g.size(); ++i) grads_[i] += w * g[i];
  if (timer_) timer_(stage_.block_begin, false);
  if (on_unit)
    for (int u = stage_.block_end + 1; u >= 0; --u) on_unit(u);
}

std::vector<ModelBuffer> ResNetStage::model_buffers() {
  std::vector<ModelBuffer> out;
  for (auto& [name, values] : net_->running_stats()) out.push_back({name, values});
  return out;
}

size_t ResNetStage::activation_bytes_per_slot() const {
  return size_t(B_) * size_t(net_->kept_floats_per_image()) * sizeof(float);
}

// backward's gradient buffers (a block's: the sum, the unit chain, the previous unit's, the projection's; a few
// maps of the largest size), the network's scratch gradients, the micro-batch's images as floats, and (bf16)
// the widened parameters
size_t ResNetStage::work_bytes() const {
  const size_t maps = 6 * size_t(B_) * size_t(net_->largest_map_per_image());
  return (maps + net_->grads().size() + images_.size() + (bf16_ ? size_t(net_->param_count()) : 0)) * sizeof(float);
}

}  // namespace gt::vision
