#pragma once
// The small-image ResNet (He et al. 2016, section 4.2: CIFAR form): a 3x3 stem, no max pool, stages of basic
// blocks (two 3x3 convolutions with BatchNorm, ReLU, and an identity shortcut or a 1x1 stride-2 projection when
// the shape changes), global average pooling and a fully connected classifier. ResNet-20 is widths {16, 32, 64}
// with 3 blocks per stage. Parameters live in one flat fp32 array (so a data-parallel all-reduce can take them
// as one buffer), each tensor an entry of tensors() with its offset and whether weight decay applies to it.
// Activations are channels-last. BatchNorm statistics are this process's batch's (per-rank under DP).
#include <memory>
#include <string>
#include <vector>

namespace gt::vision {

struct ResNetConfig {
  int height = 28, width = 28, channels = 1, classes = 10;
  std::vector<int> widths = {16, 32, 64};
  int blocks_per_stage = 3;
  unsigned seed = 1;  // initialisation
};

struct ParamTensor {
  std::string name;
  long offset = 0, size = 0;
  bool decay = true;  // false for BatchNorm's gamma/beta and the classifier's bias
  long fan_in = 0;    // a convolution's r*s*c (its initialisation scale); 0 for every other tensor
};

struct StepResult {
  double loss = 0.0;
  int correct = 0;  // top-1 hits in the batch
};

class ResNet {
 public:
  explicit ResNet(const ResNetConfig& cfg);
  ~ResNet();
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  const ResNetConfig& config() const { return cfg_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }

  // images: batch x H x W x C fp32 (already normalised); labels in [0, classes). train=true uses and updates
  // BatchNorm's batch statistics and keeps what backward() needs; train=false uses the running statistics.
  StepResult forward(int batch, const float* images, const int* labels, bool train);
  // Gradients of the mean loss of the last training forward, overwriting grads().
  void backward();

 private:
  struct Impl;
  void init_params();
  float* forward_features(bool train);  // stem and blocks; returns the last block's output
  ResNetConfig cfg_;
  std::vector<ParamTensor> tensors_;
  std::vector<float> params_, grads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gt::vision
