// TensorLayout: tensors in declaration order, the total padded so that DP shards are equal, whole cache
// lines, cover the buffer exactly and do not overlap; the tied head copy is declared by the model.
#include <gtest/gtest.h>

#include "src/core/error.hpp"
#include "src/model/gpt.hpp"

namespace {
gt::ModelConfig small_model() {
  gt::ModelConfig m;
  m.n_layer = 3; m.d_model = 40; m.n_head = 4; m.seq_len = 8; m.vocab_size = 96;
  return m;
}
}  // namespace

TEST(TensorLayout, ShardsAreEqualAlignedAndCoverTheBuffer) {
  const gt::ModelConfig m = small_model();
  gt::StageLayout whole{0, 1, 0, m.n_layer};
  for (int dp : {1, 2, 3, 8}) {
    gt::TensorLayout layout(gt::model_tensor_specs(m, whole, 0, 1), dp);
    size_t expect = 0;
    for (const auto& s : layout.tensors()) {
      EXPECT_EQ(s.offset, expect) << s.name;  // declaration order, no gaps between tensors
      expect += s.size;
    }
    EXPECT_EQ(layout.used(), expect);
    EXPECT_GE(layout.size(), layout.used());
    EXPECT_LT(layout.size() - layout.used(), size_t(dp) * gt::TensorLayout::kAlign);  // minimal padding
    size_t next = 0;
    for (int r = 0; r < dp; ++r) {
      const gt::Range sh = layout.shard_range(r);
      EXPECT_EQ(sh.begin, next);
      EXPECT_EQ(sh.size(), layout.size() / size_t(dp));
      EXPECT_EQ(sh.begin % gt::TensorLayout::kAlign, 0u);
      next = sh.end;
    }
    EXPECT_EQ(next, layout.size());
  }
}

TEST(TensorLayout, PaddingIsZeroAndTensorsMatchTheUnpaddedInit) {
  const gt::ModelConfig m = small_model();
  gt::StageLayout whole{0, 1, 0, m.n_layer};
  gt::TensorLayout one(gt::model_tensor_specs(m, whole, 0, 1), 1), four(gt::model_tensor_specs(m, whole, 0, 1), 4);
  std::vector<float> a(one.size(), -1.0f), b(four.size(), -1.0f);
  gt::initial_params(one, 7, a.data());
  gt::initial_params(four, 7, b.data());
  for (size_t i = 0; i < one.used(); ++i) ASSERT_EQ(a[i], b[i]) << i;
  for (size_t i = four.used(); i < four.size(); ++i) ASSERT_EQ(b[i], 0.0f) << i;
}

TEST(TensorLayout, OnlyTheHeadCopyOfWteOffStageZeroIsTied) {
  const gt::ModelConfig m = small_model();
  gt::StageLayout first{0, 2, 0, 2}, last{1, 2, 2, 3}, whole{0, 1, 0, 3};
  for (const auto& s : gt::model_tensor_specs(m, first, 0, 1)) EXPECT_EQ(s.tied_to_stage, -1) << s.name;
  for (const auto& s : gt::model_tensor_specs(m, whole, 0, 1)) EXPECT_EQ(s.tied_to_stage, -1) << s.name;
  for (const auto& s : gt::model_tensor_specs(m, last, 0, 1)) EXPECT_EQ(s.tied_to_stage, s.name == "wte" ? 0 : -1) << s.name;
  EXPECT_THROW(gt::TensorLayout(gt::model_tensor_specs(m, whole, 0, 1), 0), gt::Error);
}
