#pragma once
// The ResNet behind the trainer's StageModel interface (the model seam, src/model/model_family.hpp): one stage
// (pipeline and tensor parallelism are refused by the family), computing on the TrainState's flat buffers:
//   fp32   the parameters are read in place;
//   bf16   (train.precision = "bf16") the parameters are the bf16 working copy, widened (exactly) into an fp32
//          array before each forward; the convolutions multiply in bf16 (ResNetConfig::bf16), everything else,
//          the gradients included, is fp32.
//   fp16   (train.precision = "fp16") the same with an fp16 working copy and fp16 convolutions (ResNetConfig::fp16,
//          emulated on CPUs); the loss scale enters at the logits' gradient instead of at the hand-off, so that
//          the convolutions' gradients are scaled into fp16's range (the loss scaler's reason to exist).
//   rows   each sample is H*W*C normalised fp32 pixels (their bits in int32 words) and then its label, as the
//          image sources of src/data/image_source.hpp write them;
//   loss   the mean cross-entropy of the micro-batch; the trainer's loss_scale (d(loss)/d(sample loss) times the
//          loss scale) weights it by its share of the global batch, so micro-batches and DP ranks add up to the
//          global batch's mean;
//   grads  the network writes one micro-batch's gradients into its own scratch array; as backward finishes each
//          unit (stem 0, block i at i + 1, classifier last; the classifier first), the unit's part is added,
//          scaled, into the bound gradient buffer (gradient accumulation) or, under ZeRO-2/3's staging, into the
//          GradSink's buffer of the unit (unit_io.hpp), and the unit is reported done: the DP buckets go out while
//          the rest of backward runs.
//   ZeRO-3 the bound parameters are a shard: before each forward every unit is gathered (ParamSource) into one
//          full fp32 array the network reads. The network keeps whole-model arrays of its own (that one and the
//          gradient scratch), so ZeRO-2/3 shrink the trainer's buffers, not the network's (docs/vision.md).
// BatchNorm's running statistics are model buffers (model_buffers()): not parameters, checkpointed from DP rank
// 0 and made equal over the DP group before an evaluation (src/train/extensions/model_buffers.hpp).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "src/core/enums.hpp"
#include "src/model/stage_model.hpp"
#include "src/model/unit_io.hpp"
#include "src/model/units.hpp"
#include "src/vision/buffer.hpp"
#include "src/vision/resnet.hpp"

namespace gt::vision {

class ResNetStage final : public StageModel {
 public:
  // precision: fp32, bf16 or fp16 (above: the bound parameters' type and the convolutions'); layout: the
  // trainer's, which puts every tensor at the network's own offset (the family checks), for the units' ranges
  ResNetStage(const ResNetConfig& cfg, int micro_batch_size, Precision precision, const TensorLayout& layout);

  ResNet& net() { return *net_; }
  const StageLayout& stage() const override { return stage_; }
  int slots() const override { return 1; }  // one stage: forward and backward of a micro-batch back to back
  void bind(void* params, void* grads) override;
  void set_samples(int slot, const int32_t* rows) override;
  void forward(int slot, bool with_grad, double loss_scale) override;
  double take_loss_sum() override;
  double take_hits() override;
  void backward(int slot, const std::function<void(int)>& on_unit) override;
  void set_unit_timer(std::function<void(int, bool)> timer) override { timer_ = std::move(timer); }
  std::vector<ModelBuffer> model_buffers() override;
  size_t activation_bytes_per_slot() const override;
  size_t work_bytes() const override;

  // A one-stage model: nothing crosses stages, and ZeRO-2/3's redirections are refused by the family.
  void set_tokens(int, const int32_t*, const int32_t*) override { refuse("token inputs"); }
  void* stage_input_data(int) override { return refuse("pipeline stages"); }
  void* stage_output_data(int) override { return refuse("pipeline stages"); }
  void* grad_buffer_data() override { return refuse("pipeline stages"); }
  size_t activation_elems() const override { return 0; }
  DType activation_dtype() const override { return DType::F32; }
  void set_unit_io(const UnitIO& io) override;

 private:
  [[noreturn]] void* refuse(const char* what) const;

  std::unique_ptr<ResNet> net_;
  int B_;
  StageLayout stage_;
  void gather_params();       // ZeRO-3: every unit into params32_ (forward)
  void hand_off(int unit);    // one finished unit's scratch gradients, scaled, to the buffer or the sink
  float grad_scale() const;   // the factor from the mean loss's gradients to this micro-batch's share, scaled
  float net_scale() const;    // the part of it the network applies in backward (all of it under fp16, else 1)
  float* grads_ = nullptr;         // the bound gradient buffer (accumulated into); null when staged
  std::map<int, UnitSpan> units_;  // the layout's units (ranges packed in the order ParamSource/GradSink use)
  UnitIO io_;                      // ZeRO-3's parameter source, ZeRO-2/3's gradient sink (null: the bound buffers)
  Precision precision_;
  void widen(long n, const uint16_t* from, float* to) const;  // the 16-bit working type's values into fp32
  const uint16_t* params16_ = nullptr;  // bf16, fp16: the bound working copy
  Buffer<float> params32_;         // bf16, fp16 or ZeRO-3: the fp32 values the network reads
  Buffer<float> images_;           // B x H x W x C, where the kernels read them (buffer.hpp)
  std::vector<int> labels_;        // B
  double scale_ = 0;               // the last training forward's loss_scale
  double loss_sum_ = 0, hits_ = 0; // since the last take
  std::function<void(int, bool)> timer_;
};

}  // namespace gt::vision
