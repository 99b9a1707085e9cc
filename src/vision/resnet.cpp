// The small-image ResNet: parameter layout, initialisation, and the forward/backward pass over the layers of
// resnet_layers.hpp.
#include "src/vision/resnet.hpp"

#include <cmath>
#include <random>

#include "src/core/error.hpp"
#include "src/vision/classifier.hpp"
#include "src/vision/pool.hpp"
#include "src/vision/resnet_impl.hpp"
#include "src/vision/resnet_layers.hpp"

namespace gt::vision {

using detail::BasicBlock;
using detail::BatchNormLayer;
using detail::ConvLayer;
using detail::Dims;


namespace {

// Appends a tensor to the layout and returns its offset.
long add(std::vector<ParamTensor>& t, long& total, const std::string& name, long size, bool decay,
         long fan_in = 0) {
  t.push_back({name, total, size, decay, fan_in});
  total += size;
  return total - size;
}

void add_conv(std::vector<ParamTensor>& t, long& total, const std::string& name, ConvLayer& c) {
  const long fan_in = long(c.kernel) * c.kernel * c.cin;
  c.w_off = add(t, total, name + ".weight", c.cout * fan_in, true, fan_in);
}

void add_bn(std::vector<ParamTensor>& t, long& total, const std::string& name, BatchNormLayer& bn, int ch) {
  bn.init(ch);
  bn.gamma_off = add(t, total, name + ".gamma", ch, false);
  bn.beta_off = add(t, total, name + ".beta", ch, false);
}

}  // namespace

ResNet::ResNet(const ResNetConfig& cfg) : cfg_(cfg), impl_(std::make_unique<Impl>()) {
  if (cfg.widths.empty() || cfg.blocks_per_stage < 1 || cfg.classes < 2)
    throw Error("resnet: needs at least one stage, one block per stage and two classes");
  auto& m = *impl_;
  long total = 0;
  m.stem = {cfg.channels, cfg.widths[0], 3, 1, 1};
  add_conv(tensors_, total, "stem.conv", m.stem);
  add_bn(tensors_, total, "stem.bn", m.stem_bn, cfg.widths[0]);
  int cin = cfg.widths[0];
  for (size_t st = 0; st < cfg.widths.size(); ++st)
    for (int b = 0; b < cfg.blocks_per_stage; ++b) {
      const int cout = cfg.widths[st], stride = (st > 0 && b == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(st) + ".block" + std::to_string(b);
      BasicBlock blk;
      blk.conv1 = {cin, cout, 3, stride, 1};
      blk.conv2 = {cout, cout, 3, 1, 1};
      add_conv(tensors_, total, name + ".conv1", blk.conv1);
      add_bn(tensors_, total, name + ".bn1", blk.bn1, cout);
      add_conv(tensors_, total, name + ".conv2", blk.conv2);
      add_bn(tensors_, total, name + ".bn2", blk.bn2, cout);
      blk.has_proj = stride != 1 || cin != cout;
      if (blk.has_proj) {
        blk.proj = {cin, cout, 1, stride, 0};
        add_conv(tensors_, total, name + ".proj", blk.proj);
        add_bn(tensors_, total, name + ".bn_proj", blk.bn_proj, cout);
      }
      m.blocks.push_back(std::move(blk));
      cin = cout;
    }
  m.features = cin;
  m.fc_w = add(tensors_, total, "fc.weight", long(cfg.classes) * cin, true);
  m.fc_b = add(tensors_, total, "fc.bias", cfg.classes, false);
  params_.assign(total, 0.f);
  grads_.assign(total, 0.f);
  init_params();
}

ResNet::~ResNet() = default;

// He-normal convolutions (std sqrt(2 / fan_in)), BatchNorm gamma 1 and beta 0, the classifier uniform in
// +-1/sqrt(features) with a zero bias (PyTorch's defaults for these layers), deterministic by the seed.
void ResNet::init_params() {
  std::mt19937_64 gen(cfg_.seed);
  for (const auto& t : tensors_) {
    float* p = params_.data() + t.offset;
    if (t.fan_in > 0) {  // a convolution
      std::normal_distribution<float> d(0.f, std::sqrt(2.f / float(t.fan_in)));
      for (long i = 0; i < t.size; ++i) p[i] = d(gen);
    } else if (t.name == "fc.weight") {
      const float a = 1.f / std::sqrt(float(impl_->features));
      std::uniform_real_distribution<float> d(-a, a);
      for (long i = 0; i < t.size; ++i) p[i] = d(gen);
    } else {
      const bool gamma = t.name.size() > 6 && t.name.compare(t.name.size() - 6, 6, ".gamma") == 0;
      for (long i = 0; i < t.size; ++i) p[i] = gamma ? 1.f : 0.f;
    }
  }
}

}  // namespace gt::vision
