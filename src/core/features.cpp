#include "src/core/features.hpp"

#include "src/core/config.hpp"
#include "src/core/error.hpp"

namespace gt {

const std::vector<Incompatibility>& incompatibilities() {
  static const std::vector<Incompatibility> table = {
      // data-parallel shares (docs/adaptive.md)
      {Feature::UnevenShares, Feature::ZeroStaged,
       "ZeRO-2/3 stage gradients per micro-batch assuming equal counts on every replica; use zero <= 1"},
      {Feature::UnevenShares, Feature::TopK,
       "top-k's error feedback assumes equal shares; use compress.method none, bf16 or fp16"},
      {Feature::UnevenShares, Feature::Pipeline, "uneven shares are for pp = 1 only"},
      {Feature::UnevenShares, Feature::SyncBN,
       "every rank's BatchNorm sums with the others' once per micro-batch, so the counts must be equal"},
      // the gradient wire (docs/compression.md)
      {Feature::GradWireBF16, Feature::TopK, "the gradient all-reduce has one wire type"},
      {Feature::GradWireBF16, Feature::CompressFP16, "the gradient all-reduce has one wire type"},
      {Feature::TopK, Feature::ZeroStaged, "a compressed reduce-scatter is not implemented"},
      // 2:4 sparsity (docs/sparsity.md)
      {Feature::Sparsity24, Feature::ZeroSharded, "the masked working copy of sharded masters is not implemented"},
      {Feature::Sparsity24, Feature::HalfPrecision, "only fp32 working parameters carry masks"},
      // the interleaved schedule's chunks are equal (docs/planner.md)
      {Feature::Interleaved, Feature::StageBlocks,
       "its chunks are equal: model.n_layer / (pp x virtual_stages) layers each"},
      {Feature::Interleaved, Feature::Rebalance, "its chunks are equal"},
      // the ResNet family (docs/vision.md)
      {Feature::ResNet, Feature::TensorParallel, "a ResNet has no tensor parallelism; use data parallelism"},
      {Feature::ResNet, Feature::Pipeline, "a ResNet runs as one pipeline stage; use data parallelism"},
      {Feature::ResNet, Feature::Recompute, "a ResNet keeps every activation"},
      {Feature::ResNet, Feature::Adapt, "adaptive parallelism moves transformer blocks"},
      {Feature::ResNet, Feature::Rebalance, "rebalancing moves transformer blocks"},
      {Feature::ResNet, Feature::AutoLayout, "the planner has no ResNet model"},
  };
  return table;
}

namespace {

bool uneven_shares(const Config& c) {
  for (int s : c.parallel.dp_share_counts())
    if (s != c.train.micro_batches) return true;
  return false;
}

std::string quoted(const std::string& key, const std::string& v) { return key + " = \"" + v + "\""; }

}  // namespace

FeatureSet::FeatureSet(const Config& c) {
  const ConfigChoices t = c.choices();
  const ParallelConfig& p = c.parallel;
  auto add = [&](bool on, Feature f, std::string text) {
    if (!on) return;
    on_.push_back(f);
    text_.push_back(std::move(text));
  };
  add(t.model == ModelKind::ResNet, Feature::ResNet, quoted("model.kind", c.model.kind));
  add(p.tp > 1, Feature::TensorParallel, "parallel.tp = " + std::to_string(p.tp));
  add(p.pp > 1, Feature::Pipeline, "parallel.pp = " + std::to_string(p.pp));
  add(t.schedule == PipelineSchedule::Interleaved, Feature::Interleaved, quoted("parallel.schedule", p.schedule));
  add(!p.stage_blocks.empty(), Feature::StageBlocks, quoted("parallel.stage_blocks", p.stage_blocks));
  add(t.rebalance == RebalanceMode::Auto, Feature::Rebalance, quoted("parallel.rebalance", p.rebalance));
  add(t.adapt != AdaptMode::Off, Feature::Adapt, quoted("parallel.adapt", p.adapt));
  add(t.layout == LayoutMode::Auto, Feature::AutoLayout, quoted("parallel.layout", p.layout));
  add(p.zero >= 1, Feature::ZeroSharded, "parallel.zero = " + std::to_string(p.zero));
  add(p.zero >= 2, Feature::ZeroStaged, "parallel.zero = " + std::to_string(p.zero));
  add(!p.dp_shares.empty() && uneven_shares(c), Feature::UnevenShares, quoted("parallel.dp_shares", p.dp_shares) + " (uneven)");
  add(t.compress == CompressMethod::TopK, Feature::TopK, quoted("compress.method", c.compress.method));
  add(t.compress == CompressMethod::FP16, Feature::CompressFP16, quoted("compress.method", c.compress.method));
  add(t.grad_reduce_dtype == GradWire::BF16, Feature::GradWireBF16, quoted("parallel.grad_reduce_dtype", p.grad_reduce_dtype));
  add(t.sparsity != SparsityPattern::None, Feature::Sparsity24, quoted("sparsity.pattern", c.sparsity.pattern));
  add(t.precision != Precision::FP32, Feature::HalfPrecision, quoted("train.precision", c.train.precision));
  add(t.precision == Precision::FP16, Feature::FP16, quoted("train.precision", c.train.precision));
  add(t.recompute != Recompute::None, Feature::Recompute, quoted("train.recompute", c.train.recompute));
  add(c.model.sync_bn, Feature::SyncBN, "model.sync_bn = true");
}

bool FeatureSet::has(Feature f) const {
  for (Feature g : on_)
    if (g == f) return true;
  return false;
}

std::string FeatureSet::describe(Feature f) const {
  for (size_t i = 0; i < on_.size(); ++i)
    if (on_[i] == f) return text_[i];
  return "";
}

void FeatureSet::check() const {
  for (const Incompatibility& row : incompatibilities())
    if (has(row.a) && has(row.b))
      throw Error("config: " + describe(row.a) + " with " + describe(row.b) + ": " + row.reason);
}

}  // namespace gt
