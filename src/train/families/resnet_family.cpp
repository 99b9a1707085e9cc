// The ResNet family (resnet_family.hpp).
#include "src/train/families/resnet_family.hpp"

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "kernels/kokkos_compat.hpp"
#include "src/core/error.hpp"
#include "src/data/image_source.hpp"
#include "src/grid/grid.hpp"
#include "src/vision/conv.hpp"
#include "src/vision/resnet_stage.hpp"

namespace gt {

namespace {

vision::ResNetConfig net_config(const ModelConfig& m) {
  vision::ResNetConfig c = vision::resnet_preset(m.resnet, m.image_size, m.image_size, m.image_channels, m.classes);
  c.winograd = m.conv_algorithm_kind() == ConvAlgorithm::Winograd;
  return c;
}

// "stage1.block0.conv1.weight" -> "stage1.block0"; "" for the stem and the classifier
std::string block_of(const std::string& name) {
  if (name.rfind("stage", 0) != 0) return "";
  const size_t dot = name.find('.', name.find('.') + 1);
  return name.substr(0, dot);
}

// The gamma of each residual block's last BatchNorm on the main path ("stage1.block0.bn2.gamma" in a basic block,
// bn3 in a bottleneck; never bn_proj): what model.zero_init_residual starts at 0.
std::set<std::string> last_bn_gammas(const std::vector<vision::ParamTensor>& tensors) {
  std::map<std::string, std::pair<int, std::string>> last;  // block -> (highest bn index, its gamma's name)
  for (const vision::ParamTensor& t : tensors) {
    const std::string b = block_of(t.name);
    const size_t at = t.name.rfind(".bn");
    if (b.empty() || at == std::string::npos || t.name.compare(t.name.size() - 6, 6, ".gamma") != 0) continue;
    const std::string k = t.name.substr(at + 3, t.name.size() - 6 - at - 3);  // "2" of ".bn2.gamma"; "_proj"
    if (k.empty() || !std::isdigit(static_cast<unsigned char>(k[0]))) continue;
    auto& e = last[b];
    if (std::stoi(k) > e.first) e = {std::stoi(k), t.name};
  }
  std::set<std::string> out;
  for (const auto& kv : last) out.insert(kv.second.second);
  return out;
}

}  // namespace

ResNetFamily::ResNetFamily(const ModelConfig& m) : m_(m), net_(net_config(m)) {
  const vision::ResNet shape(net_, false);
  flops_ = shape.train_flops_per_image();
  std::string block;
  int unit = 0;
  const std::set<std::string> zero_gammas = m.zero_init_residual ? last_bn_gammas(shape.tensors()) : std::set<std::string>{};
  for (const vision::ParamTensor& t : shape.tensors()) {
    TensorSpec s;
    s.name = t.name;
    s.global_shape.assign(t.shape.begin(), t.shape.end());
    s.decay = t.decay;
    const bool gamma = t.name.size() > 6 && t.name.compare(t.name.size() - 6, 6, ".gamma") == 0;
    if (t.fan_in > 0) {  // He-normal convolutions (as the standalone ResNet draws them)
      s.init = Init::Normal;
      s.std = std::sqrt(2.0 / double(t.fan_in));
      // 2:4 along the input channels where they come in groups of 4: every conv but a 1- or 3-channel stem
      // (NVIDIA's ASP leaves the first convolution dense too)
      s.sparse24 = t.shape.back() % 4 == 0;
    } else if (t.name == "fc.weight") {  // PyTorch's Linear default: uniform in +-1/sqrt(fan_in)
      s.init = Init::Uniform;
      s.std = 1.0 / std::sqrt(double(t.shape[1]));
    } else {
      s.init = gamma && !zero_gammas.count(t.name) ? Init::Ones : Init::Zeros;
    }
    // units: the stem 0, block i at i + 1 (a new block name starts the next), the classifier after the last
    const std::string b = block_of(t.name);
    if (!b.empty() && b != block) {
      ++unit;
      block = b;
    }
    s.unit = t.name.rfind("fc.", 0) == 0 ? unit + 1 : unit;
    specs_.push_back(std::move(s));
  }
  for (size_t st = 0; st < net_.widths.size(); ++st) blocks_ += net_.blocks_in(st);
}

std::string ResNetFamily::signature() const {
  return "resnet " + m_.resnet + " image=" + std::to_string(m_.image_size) + "x" + std::to_string(m_.image_size) +
         "x" + std::to_string(m_.image_channels) + " classes=" + std::to_string(m_.classes);
}

std::vector<TensorSpec> ResNetFamily::tensor_specs(const StageLayout&, int, int) const { return specs_; }

std::unique_ptr<StageModel> ResNetFamily::make_stage(const StageBuild& b) const {
  auto stage = std::make_unique<vision::ResNetStage>(net_, b.micro_batch_size, b.precision, *b.layout);
  if (m_.sync_bn && b.dp && b.dp->size() > 1) {
    Comm* group = b.dp;
    stage->net().set_group_sum([group](double* v, int n) { group->allreduce(v, size_t(n), DType::F64, ReduceOp::Sum); });
  }
  // The network computes at its own offsets; the trainer's layout must put every tensor at the same place.
  const std::vector<vision::ParamTensor>& own = stage->net().tensors();
  const std::vector<TensorSpec>& lay = b.layout->tensors();
  if (own.size() != lay.size()) throw Error("model.kind = \"resnet\": internal: the layout lists another model");
  for (size_t k = 0; k < own.size(); ++k)
    if (size_t(own[k].offset) != lay[k].offset || size_t(own[k].size) != lay[k].size)
      throw Error("model.kind = \"resnet\": internal: tensor " + own[k].name + " is elsewhere in the layout");
  return stage;
}

std::unique_ptr<DataSource> ResNetFamily::make_source(const Config& cfg) const { return make_image_source(cfg); }

// Every pair the ResNet cannot run with (TP, PP, fp8, recompute, adapt, rebalance, layout =
// auto, uneven shares under sync BN) is a row of the compatibility table (src/core/features.cpp), checked before the
// family is made; nothing here depends on the grid beyond that.
// Beyond the table: on a device build (CUDA: the TrainState in device memory) the convolutions are cuDNN's, fp32
// only so far (the bf16 and fp16 forms of conv.hpp are host code: oneDNN's kernels or the emulation), so a device
// build takes fp32 ResNets and refuses the others with one line; and one without cuDNN refuses the ResNet.
void ResNetFamily::check(const Config& cfg, const GridShape&) const {
  if (exec_on_host) return;
  if (vision::conv_backend() != vision::ConvBackend::cudnn)
    throw Error("config: model.kind = \"resnet\" on a device build needs cuDNN's convolutions, which this build or "
                "this machine lacks (docs/vision.md)");
  if (cfg.precision() != Precision::FP32)
    throw Error("config: model.kind = \"resnet\" with train.precision = \"" + cfg.train.precision +
                "\" is not built for device builds yet (cuDNN runs fp32 only so far; docs/vision.md)");
}

}  // namespace gt
