// The compatibility table (src/core/features.hpp): every row refuses its pair through Config::validate with one
// line that names both settings as the config says them and the row's reason; each feature of a row is accepted
// alone (so a row that matched more than its pair, or a recipe below that broke the config, would fail here).
#include <gtest/gtest.h>

#include <set>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/core/features.hpp"

namespace {

using gt::Feature;

// The settings that turn one feature on (and what it needs to be valid on its own).
void turn_on(gt::Config& c, Feature f) {
  switch (f) {
    case Feature::ResNet: c.model.kind = "resnet"; break;
    case Feature::TensorParallel: c.parallel.tp = 2; break;
    case Feature::Pipeline: c.parallel.pp = 2; break;
    case Feature::Interleaved:
      c.parallel.schedule = "interleaved";
      c.parallel.virtual_stages = 2;
      c.parallel.pp = 2;
      c.model.n_layer = 4;
      c.train.micro_batches = 2;
      break;
    case Feature::StageBlocks:
      c.parallel.pp = 2;
      c.parallel.stage_blocks = std::to_string(c.model.n_layer - 1) + ",1";
      break;
    case Feature::Rebalance: c.parallel.rebalance = "auto"; break;
    case Feature::Adapt: c.parallel.adapt = "monitor"; break;
    case Feature::AutoLayout: c.parallel.layout = "auto"; break;
    case Feature::ZeroSharded: c.parallel.zero = 1; break;
    case Feature::ZeroStaged: c.parallel.zero = 2; break;
    case Feature::UnevenShares:
      c.parallel.dp = 2;
      c.train.micro_batches = 2;
      c.parallel.dp_shares = "3,1";
      break;
    case Feature::TopK: c.compress.method = "topk"; break;
    case Feature::CompressFP16: c.compress.method = "fp16"; break;
    case Feature::GradWireBF16: c.parallel.grad_reduce_dtype = "bf16"; break;
    case Feature::Sparsity24: c.sparsity.pattern = "2:4"; break;
    case Feature::HalfPrecision: c.train.precision = "bf16"; break;
    case Feature::FP16: c.train.precision = "fp16"; break;
    case Feature::Recompute: c.train.recompute = "full"; break;
    case Feature::SyncBN: c.model.sync_bn = true; break;
  }
}

}  // namespace

TEST(Features, EveryRowRefusesItsPairWithOneLine) {
  ASSERT_GE(gt::incompatibilities().size(), 15u);
  for (const gt::Incompatibility& row : gt::incompatibilities()) {
    gt::Config c;
    turn_on(c, row.a);
    turn_on(c, row.b);
    const gt::FeatureSet set(c);
    ASSERT_TRUE(set.has(row.a) && set.has(row.b)) << row.reason;
    try {
      c.validate();
      ADD_FAILURE() << "not refused: " << set.describe(row.a) << " with " << set.describe(row.b);
    } catch (const gt::Error& e) {
      const std::string want = "config: " + set.describe(row.a) + " with " + set.describe(row.b) + ": " + row.reason;
      EXPECT_EQ(std::string(e.what()), want);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(Features, EachFeatureOfARowRunsAlone) {
  std::set<Feature> seen;
  for (const gt::Incompatibility& row : gt::incompatibilities()) seen.insert({row.a, row.b});
  for (Feature f : seen) {
    gt::Config c;
    turn_on(c, f);
    EXPECT_NO_THROW(c.validate()) << gt::FeatureSet(c).describe(f);
    EXPECT_TRUE(gt::FeatureSet(c).has(f));
  }
}
