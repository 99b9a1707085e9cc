// The ResNet's parameter layout (stem, blocks, classifier), the named presets, and initialisation; the passes are
// resnet_step.cpp's.
#include "src/vision/resnet.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "src/core/error.hpp"
#include "src/vision/classifier.hpp"
#include "src/vision/pool.hpp"
#include "src/vision/resnet_impl.hpp"
#include "src/vision/resnet_layers.hpp"

namespace gt::vision {

using detail::ResBlock;
using detail::BatchNormLayer;
using detail::ConvLayer;
using detail::Dims;


namespace {

// Appends a tensor to the layout and returns its offset.
long add(std::vector<ParamTensor>& t, long& total, const std::string& name, std::vector<long> shape, bool decay,
         long fan_in = 0) {
  long size = 1;
  for (long d : shape) size *= d;
  t.push_back({name, total, size, decay, fan_in, std::move(shape)});
  total += size;
  return total - size;
}

void add_conv(std::vector<ParamTensor>& t, long& total, const std::string& name, ConvLayer& c) {
  const long fan_in = long(c.kernel) * c.kernel * c.cin;
  c.w_off = add(t, total, name + ".weight", {c.cout, c.kernel, c.kernel, c.cin}, true, fan_in);
}

void add_bn(std::vector<ParamTensor>& t, long& total, const std::string& name, BatchNormLayer& bn, int ch) {
  bn.init(ch);
  bn.gamma_off = add(t, total, name + ".gamma", {ch}, false);
  bn.beta_off = add(t, total, name + ".beta", {ch}, false);
}

}  // namespace

// One block of stage `st`: its units (basic: 3x3, 3x3; bottleneck: 1x1, 3x3 with the stride, 1x1 to 4x) and the
// projection where the shape changes, each appended to the tensor layout under `name`.
ResBlock make_block(const ResNetConfig& cfg, int cin, int width, int stride, const std::string& name,
                    std::vector<ParamTensor>& t, long& total) {
  ResBlock blk;
  const int cout = cfg.bottleneck ? 4 * width : width;
  if (cfg.bottleneck)
    blk.convs = {{cin, width, 1, 1, 0}, {width, width, 3, stride, 1}, {width, cout, 1, 1, 0}};
  else
    blk.convs = {{cin, cout, 3, stride, 1}, {cout, cout, 3, 1, 1}};
  blk.bns.resize(blk.convs.size());
  for (size_t k = 0; k < blk.convs.size(); ++k) {
    add_conv(t, total, name + ".conv" + std::to_string(k + 1), blk.convs[k]);
    add_bn(t, total, name + ".bn" + std::to_string(k + 1), blk.bns[k], blk.convs[k].cout);
  }
  blk.has_proj = stride != 1 || cin != cout;
  if (blk.has_proj) {
    blk.proj = {cin, cout, 1, stride, 0};
    add_conv(t, total, name + ".proj", blk.proj);
    add_bn(t, total, name + ".bn_proj", blk.bn_proj, cout);
  }
  return blk;
}

ResNet::ResNet(const ResNetConfig& cfg, bool with_params) : cfg_(cfg), impl_(std::make_unique<Impl>()) {
  if (cfg.widths.empty() || cfg.classes < 2)
    throw Error("resnet: needs at least one stage and two classes");
  if (!cfg.stage_blocks.empty() && cfg.stage_blocks.size() != cfg.widths.size())
    throw Error("resnet: " + std::to_string(cfg.stage_blocks.size()) + " block counts for " +
                std::to_string(cfg.widths.size()) + " stages");
  for (size_t st = 0; st < cfg.widths.size(); ++st)
    if (cfg.blocks_in(st) < 1) throw Error("resnet: every stage needs at least one block");
  if (cfg.height != cfg.width)  // the global average pool takes the last map whole as one square window
    throw Error("resnet: images must be square, got " + std::to_string(cfg.height) + "x" + std::to_string(cfg.width));
  auto& m = *impl_;
  long total = 0;
  m.stem = cfg.stem == ResNetStem::ImageNet ? ConvLayer{cfg.channels, cfg.widths[0], 7, 2, 3}
                                            : ConvLayer{cfg.channels, cfg.widths[0], 3, 1, 1};
  add_conv(tensors_, total, "stem.conv", m.stem);
  add_bn(tensors_, total, "stem.bn", m.stem_bn, cfg.widths[0]);
  int cin = cfg.widths[0];
  for (size_t st = 0; st < cfg.widths.size(); ++st)
    for (int b = 0; b < cfg.blocks_in(st); ++b) {
      const int stride = (st > 0 && b == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(st) + ".block" + std::to_string(b);
      m.blocks.push_back(make_block(cfg, cin, cfg.widths[st], stride, name, tensors_, total));
      cin = m.blocks.back().convs.back().cout;
    }
  m.stem_bn.p.relu = true;  // the ReLUs after BatchNorm, fused into it: the stem's and every unit's but the last
  for (ResBlock& blk : m.blocks)
    for (size_t k = 0; k + 1 < blk.bns.size(); ++k) blk.bns[k].p.relu = true;
  if (cfg.bf16 && cfg.fp16) throw Error("resnet: bf16 and fp16 convolutions at once");
  for (ConvLayer* c : m.convs()) {
    c->bf16 = cfg.bf16;
    c->fp16 = cfg.fp16;
    // not under bf16 (oneDNN has no bf16 Winograd) nor fp16, whose emulation keeps products of fp16 values exact
    c->winograd = cfg.winograd && !cfg.bf16 && !cfg.fp16;
    c->slice_bytes = cfg.backward_slice_bytes;
  }
  m.features = cin;
  m.fc_w = add(tensors_, total, "fc.weight", {long(cfg.classes), long(cin)}, true);
  m.fc_b = add(tensors_, total, "fc.bias", {long(cfg.classes)}, false);
  n_params_ = total;
  if (!with_params) return;
  params_.assign(total, 0.f);
  grads_.assign(total, 0.f);
  bind(params_.data(), grads_.data());
  init_params();
}

namespace {

// The shapes of the passes without running them (the FLOPs and the memory ledger), for one image (n = 1): calls
// conv(layer, input dims) for every convolution in forward order and block(output dims) after every block.
template <class Conv, class Block>
void walk_shapes(const ResNetConfig& cfg, const ResNet::Impl& m, Conv&& conv, Block&& block) {
  Dims d{1, cfg.height, cfg.width, cfg.channels};
  conv(m.stem, d);
  d = m.stem.out(d);
  if (cfg.stem == ResNetStem::ImageNet) d = {1, (d.h - 1) / 2 + 1, (d.w - 1) / 2 + 1, d.c};  // 3x3/2 pad 1
  for (const auto& blk : m.blocks) {
    const Dims in = d;
    for (const ConvLayer& c : blk.convs) {
      conv(c, d);
      d = c.out(d);
    }
    if (blk.has_proj) conv(blk.proj, in);
    block(d);
  }
}

}  // namespace

double ResNet::train_flops_per_image() const {
  double fwd = 2.0 * impl_->features * cfg_.classes;  // the classifier
  walk_shapes(cfg_, *impl_, [&](const ConvLayer& c, const Dims& in) {
    const Dims o = c.out(in);
    fwd += 2.0 * double(o.size()) * c.kernel * c.kernel * c.cin;
  }, [](const Dims&) {});
  return 3.0 * fwd;
}

long ResNet::kept_floats_per_image() const {
  // the input, every conv's output and its BN's output (a block's last BN writes the block's output, summed with
  // the shortcut: one map for both); the ImageNet stem's pooled map
  // and its argmax (8-byte indices: two floats' worth) are a quarter of the stem's map each. fp16's emulation
  // keeps each conv's rounded input and output gradient besides (ConvLayer::xr, dyr)
  long kept = long(cfg_.height) * cfg_.width * cfg_.channels;
  walk_shapes(cfg_, *impl_, [&](const ConvLayer& c, const Dims& in) {
    kept += 2 * c.out(in).size() + (cfg_.fp16 ? in.size() + c.out(in).size() : 0);
  }, [](const Dims&) {});
  if (cfg_.stem == ResNetStem::ImageNet) kept += 3 * (impl_->stem.out({1, cfg_.height, cfg_.width, cfg_.channels}).size() / 4);
  return kept;
}

long ResNet::largest_map_per_image() const {
  long big = 0;
  walk_shapes(cfg_, *impl_, [&](const ConvLayer& c, const Dims& in) { big = std::max({big, in.size(), c.out(in).size()}); },
              [](const Dims&) {});
  return big;
}

void ResNet::set_group_sum(std::function<void(double*, int)> sum) {
  impl_->stem_bn.p.group_sum = sum;
  for (detail::ResBlock& blk : impl_->blocks) {
    for (detail::BatchNormLayer& bn : blk.bns) bn.p.group_sum = sum;
    blk.bn_proj.p.group_sum = sum;
  }
}

std::vector<std::pair<std::string, Buffer<float>*>> ResNet::running_stats() {
  std::vector<std::pair<std::string, Buffer<float>*>> out;
  auto add_bn = [&](const std::string& name, detail::BatchNormLayer& bn) {
    out.emplace_back(name + ".running_mean", &bn.running_mean);
    out.emplace_back(name + ".running_var", &bn.running_var);
  };
  add_bn("stem.bn", impl_->stem_bn);
  size_t i = 0;
  for (size_t st = 0; st < cfg_.widths.size(); ++st)
    for (int b = 0; b < cfg_.blocks_in(st); ++b, ++i) {
      detail::ResBlock& blk = impl_->blocks[i];
      const std::string name = "stage" + std::to_string(st) + ".block" + std::to_string(b);
      for (size_t k = 0; k < blk.bns.size(); ++k) add_bn(name + ".bn" + std::to_string(k + 1), blk.bns[k]);
      if (blk.has_proj) add_bn(name + ".bn_proj", blk.bn_proj);
    }
  return out;
}

ResNetConfig resnet_preset(const std::string& name, int height, int width, int channels, int classes) {
  ResNetConfig c;
  c.height = height;
  c.width = width;
  c.channels = channels;
  c.classes = classes;
  const std::vector<int> imagenet_widths = {64, 128, 256, 512};
  if (name == "resnet18" || name == "resnet34" || name == "resnet50" || name == "resnet18-small") {
    c.widths = imagenet_widths;
    c.stage_blocks = name == "resnet18" || name == "resnet18-small" ? std::vector<int>{2, 2, 2, 2}
                                                                     : std::vector<int>{3, 4, 6, 3};
    c.bottleneck = name == "resnet50";
    c.stem = name == "resnet18-small" ? ResNetStem::Small : ResNetStem::ImageNet;
  } else if (name == "resnet8" || name == "resnet20" || name == "resnet56") {  // 6n + 2 layers
    c.widths = {16, 32, 64};
    c.blocks_per_stage = name == "resnet8" ? 1 : name == "resnet20" ? 3 : 9;
  } else {
    throw Error("resnet: unknown model '" + name + "' (resnet18, resnet34, resnet50, resnet8, resnet20, resnet56, resnet18-small)");
  }
  return c;
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
