#pragma once
// The ResNet family (He et al. 2016) in two forms:
//   small-image (section 4.2, CIFAR form): a 3x3 stem, no max pool, stages of basic blocks; ResNet-20 is widths
//     {16, 32, 64} with 3 blocks per stage (ResNet-56: 9);
//   ImageNet (224x224): a 7x7 stride-2 stem and a 3x3 stride-2 max pool, stages of widths {64, 128, 256, 512}:
//     ResNet-18/34 basic blocks {2,2,2,2} / {3,4,6,3}, ResNet-50 bottleneck blocks {3,4,6,3} (4x expansion).
// Blocks (resnet_layers.hpp): two 3x3 convolutions (basic) or 1x1-3x3-1x1 (bottleneck) with BatchNorm and ReLU,
// an identity shortcut or a 1x1 strided projection with BatchNorm where the shape changes; then global average
// pooling and a fully connected classifier. Parameters live in one flat fp32 array (so a data-parallel all-reduce
// can take them as one buffer), each tensor an entry of tensors() with its offset and whether weight decay applies
// to it. Activations are channels-last. BatchNorm statistics are this process's batch's (per-rank under DP).
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "src/vision/buffer.hpp"

namespace gt::vision {

enum class ResNetStem {
  Small,     // 3x3 stride 1, no pool
  ImageNet,  // 7x7 stride 2 (pad 3), BN, ReLU, 3x3 max pool stride 2 (pad 1)
};

struct ResNetConfig {
  int height = 28, width = 28, channels = 1, classes = 10;
  std::vector<int> widths = {16, 32, 64};
  int blocks_per_stage = 3;
  std::vector<int> stage_blocks;  // blocks of each stage; empty: blocks_per_stage everywhere
  bool bottleneck = false;        // 1x1-3x3-1x1 blocks with 4x expansion instead of basic blocks
  ResNetStem stem = ResNetStem::Small;
  unsigned seed = 1;  // initialisation
  // Every convolution multiplies in bf16 (ConvShape::bf16; train.precision = "bf16"); BatchNorm, the classifier,
  // the loss and all activations stay fp32, as under PyTorch's CPU autocast.
  bool bf16 = false;
  // Every convolution's operands and outputs are fp16 values (train.precision = "fp16"), emulated on CPUs
  // (fp16.hpp); the rest as under bf16. The caller scales the loss (backward's grad_scale) so that the
  // gradients stay inside fp16's range.
  bool fp16 = false;
  // fp32 only: the 3x3 stride-1 convolutions may run Winograd (ConvShape::winograd; model.conv_algorithm)
  bool winograd = false;
  // Backward of a conv - BN unit over slices of images of about this many bytes of the conv's output gradient,
  // each slice made by the BatchNorm just before the conv's passes read it (while it is in cache), where the
  // conv's passes allow it and the gradient is more than twice this (ConvLayer::backward_slices); 0: never. 2 MB:
  // a quarter of what stayed in this machine's last-level cache in a read test (about 16 MB at 100 GB/s, 28 GB/s
  // beyond), room for the slice, its input and its input gradient.
  long backward_slice_bytes = 2L << 20;
  int blocks_in(size_t stage) const { return stage_blocks.empty() ? blocks_per_stage : stage_blocks[stage]; }
};

// resnet18, resnet34, resnet50 (the ImageNet form), resnet8 (tests), resnet20, resnet56 (small-image), resnet18-small (ResNet-18's
// stages on the small-image stem, for 28x28 and 32x32): the shapes of the names in the literature and torchvision,
// for images of height x width x channels and `classes` classes. gt::Error for another name.
ResNetConfig resnet_preset(const std::string& name, int height, int width, int channels, int classes);

struct ParamTensor {
  std::string name;
  long offset = 0, size = 0;
  bool decay = true;  // false for BatchNorm's gamma/beta and the classifier's bias
  long fan_in = 0;    // a convolution's r*s*c (its initialisation scale); 0 for every other tensor
  std::vector<long> shape;  // conv O x KH x KW x I, BatchNorm C, classifier weight classes x features, bias classes
};

struct StepResult {
  double loss = 0.0;
  int correct = 0;  // top-1 hits in the batch
};

class ResNet {
 public:
  // with_params = false: the layout, shapes and counts only (no parameter or gradient arrays, no initialisation):
  // what a model family needs to describe the model.
  explicit ResNet(const ResNetConfig& cfg, bool with_params = true);
  ~ResNet();
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  const ResNetConfig& config() const { return cfg_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  // The model's own arrays (initialised by the constructor), used until bind() points it at others.
  Buffer<float>& params() { return params_; }
  Buffer<float>& grads() { return grads_; }
  long param_count() const { return n_params_; }
  // Computes over the caller's arrays instead (the trainer's flat TrainState buffers, tensors() at their offsets):
  // params read, grads overwritten by backward().
  void bind(float* params, float* grads) {
    p_ = params;
    g_ = grads;
  }
  // BatchNorm's running statistics (not parameters: no gradient, no optimizer), per layer by name:
  // "<layer>.running_mean" and "<layer>.running_var", for checkpoints and for the DP group to agree on.
  std::vector<std::pair<std::string, Buffer<float>*>> running_stats();
  // Sync BN: every BatchNorm's statistics summed over a group with `sum` (batchnorm.hpp); empty: per process.
  void set_group_sum(std::function<void(double*, int)> sum);
  // Model FLOPs of one image's forward + backward: 2 per multiply-add of the convolutions and the classifier,
  // backward twice forward (as MFU counts them; BN, ReLU and pooling left out).
  double train_flops_per_image() const;
  // fp32 values per image that a training forward keeps for backward (every conv and BN output, block outputs,
  // the stem's maps), and those of the largest map (the backward's gradient buffers are a few of those).
  long kept_floats_per_image() const;
  long largest_map_per_image() const;

  // images: batch x H x W x C fp32 (already normalised); labels in [0, classes). train=true uses and updates
  // BatchNorm's batch statistics and keeps what backward() needs; train=false uses the running statistics.
  StepResult forward(int batch, const float* images, const int* labels, bool train);
  // Gradients of the mean loss of the last training forward, overwriting grads(). unit_done (may be empty) is told
  // each unit whose gradients are final, in the order backward finishes them: the classifier (blocks + 1) first,
  // then block i at i + 1 from the last block down, the stem 0 last (the family's units; a caller can ship a
  // unit's gradients while backward goes on).
  // grad_scale: the gradients are those of grad_scale x the mean loss (the loss scale, which fp16's range needs
  // inside the network; exact for a power of two).
  void backward(const std::function<void(int)>& unit_done = {}, float grad_scale = 1.f);

  struct Impl;  // the layers and the last forward's activations (resnet_impl.hpp; internal to src/vision)

 private:
  void init_params();
  float* forward_features(bool train);  // stem and blocks; returns the last block's output
  ResNetConfig cfg_;
  std::vector<ParamTensor> tensors_;
  Buffer<float> params_, grads_;  // buffer.hpp: where the kernels read and write
  long n_params_ = 0;
  float* p_ = nullptr;  // what the passes read and write: params_/grads_ or the bound arrays
  float* g_ = nullptr;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gt::vision
