// The ResNet as one pipeline stage of the trainer (resnet_stage.hpp).
#include "src/vision/resnet_stage.hpp"

#include <cstring>

#include "kernels/elementwise.hpp"
#include "kernels/half.hpp"
#include "src/core/error.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision {

namespace {
ResNetConfig with_precision(ResNetConfig c, Precision p) {
  if (p != Precision::FP32 && p != Precision::BF16 && p != Precision::FP16)
    throw Error("model.kind = \"resnet\": internal: no such ResNet precision");
  c.bf16 = p == Precision::BF16;
  c.fp16 = p == Precision::FP16;
  return c;
}

}  // namespace

ResNetStage::ResNetStage(const ResNetConfig& cfg, int micro_batch_size, Precision precision,
                         const TensorLayout& layout)
    : net_(std::make_unique<ResNet>(with_precision(cfg, precision))), B_(micro_batch_size),
      units_(unit_spans(layout)), precision_(precision) {
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
  if (precision_ != Precision::FP32) {
    params16_ = static_cast<const uint16_t*>(params);
    params32_.resize(size_t(net_->param_count()));
    net_->bind(params32_.data(), net_->grads().data());
  } else {
    net_->bind(static_cast<float*>(params), net_->grads().data());
  }
  Buffer<float>().swap(net_->params());
}

// Called after bind() (src/train/dp/data_parallel.cpp): ZeRO-3 makes the bound parameters a shard, so the network
// reads a gathered fp32 copy from now on; staged gradients leave no bound gradient buffer (hand_off uses the sink).
void ResNetStage::set_unit_io(const UnitIO& io) {
  if (io.wte_chunk_rows > 0) refuse("vocabulary chunks");
  io_ = io;
  if (io_.params) {
    params16_ = nullptr;
    params32_.resize(size_t(net_->param_count()));
    net_->bind(params32_.data(), net_->grads().data());
  }
}

void ResNetStage::gather_params() {
  for (const auto& [unit, span] : units_) {
    io_.params->use(unit, -1);
    const void* src = io_.params->params(unit);  // the unit's ranges packed, in the working type
    size_t at = 0;
    for (const Range& r : span.ranges) {
      if (precision_ != Precision::FP32)
        widen(long(r.size()), static_cast<const uint16_t*>(src) + at, params32_.data() + r.begin);
      else gt::copy(params32_.data() + r.begin, static_cast<const float*>(src) + at, long(r.size()));
      at += r.size();
    }
  }
}

// The working copy is the trainer's bf16_t or fp16_t array (kernels/half.hpp: 16-bit words of those formats),
// widened exactly by the trainer's own conversion kernel.
void ResNetStage::widen(long n, const uint16_t* from, float* to) const {
  if (precision_ == Precision::FP16) gt::convert(to, reinterpret_cast<const gt::fp16_t*>(from), n);
  else gt::convert(to, reinterpret_cast<const gt::bf16_t*>(from), n);
}

// d(mean of the micro-batch)/dw times B gives the sum over its samples; loss_scale turns that into this
// micro-batch's share of the global batch's mean (times the loss scale). Under fp16 the network applies that
// factor itself (net_scale(), inside fp16's range), and the hand-off the rest: 1. Added: micro-batches accumulate.
float ResNetStage::grad_scale() const { return float(scale_ * B_); }
float ResNetStage::net_scale() const { return precision_ == Precision::FP16 ? grad_scale() : 1.f; }

void ResNetStage::hand_off(int unit) {
  const float w = grad_scale() / net_scale();  // exact: x / 1 or x / x
  const float* g = net_->grads().data();
  float* sink = io_.grads ? io_.grads->grads(unit) : nullptr;  // the unit's ranges packed
  size_t at = 0;
  for (const Range& r : units_.at(unit).ranges) {
    float* out = sink ? sink + at : grads_ + r.begin;
    gt::add_scaled(out, g + r.begin, w, long(r.size()));
    at += r.size();
  }
}

void ResNetStage::set_samples(int /*slot*/, const int32_t* rows) {
  // The host overwrites images_, which the last micro-batch's kernels may still read on a device build (the stem's
  // backward-weights runs asynchronously on the stream): wait for them first (at once on host builds).
  device_fence();
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
  // The parameters may have changed since the last forward (an optimizer step): gather or widen them again.
  if (io_.params) gather_params();
  else if (params16_) widen(long(params32_.size()), params16_, params32_.data());
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
  net_->backward([&](int unit) {  // each unit as soon as its gradients are final: its DP bucket may go out
    hand_off(unit);
    if (on_unit) on_unit(unit);
  }, net_scale());
  if (timer_) timer_(stage_.block_begin, false);
}

std::vector<ModelBuffer> ResNetStage::model_buffers() {
  std::vector<ModelBuffer> out;
  for (auto& [name, values] : net_->running_stats()) out.push_back({name, values->data(), values->size()});
  return out;
}

size_t ResNetStage::activation_bytes_per_slot() const {
  return size_t(B_) * size_t(net_->kept_floats_per_image()) * sizeof(float);
}

// backward's gradient buffers (a block's: the sum, the unit chain, the previous unit's, the projection's; a few
// maps of the largest size), the network's scratch gradients, the micro-batch's images as floats, and (bf16,
// ZeRO-3) the fp32 parameters the network reads; fp16's rounded weights (ConvLayer::wr: at most every parameter);
// with oneDNN, the patch matrix of the strided convolutions' backward-weights (conv_gemm.cpp: at most
// kPatchBudget, counted whole whether or not the network has such a layer)
size_t ResNetStage::work_bytes() const {
  const size_t maps = 6 * size_t(B_) * size_t(net_->largest_map_per_image());
  const bool widened = precision_ != Precision::FP32 || io_.params;  // params32_
  const size_t params = size_t(net_->param_count()) * ((widened ? 1 : 0) + (precision_ == Precision::FP16 ? 1 : 0));
  const size_t patches = conv_backend() == ConvBackend::onednn ? detail::kPatchBudget : 0;
  return (maps + net_->grads().size() + images_.size() + params) * sizeof(float) + patches;
}

}  // namespace gt::vision
