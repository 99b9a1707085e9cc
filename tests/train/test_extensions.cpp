// The TrainExtension seam (src/train/extension.hpp, issue 20 Debt 3) as the Checkpointer sees it: what each
// extension adds to the state, which checkpoint datasets it owns (names from the buffer table, shapes from the
// layout, written independently here), and when top-k's residuals are restored. That the saved and resumed
// values continue bit for bit is checked end to end by test_sparsity (masks) and compress_train (residuals).
#include <gtest/gtest.h>

#include <mpi.h>

#include <set>
#include <string>

#include "src/model/gpt.hpp"
#include "src/train/sparsity.hpp"
#include "src/train/dp/topk_residuals.hpp"

namespace {

gt::ModelConfig tiny_model() {
  gt::ModelConfig m;
  m.n_layer = 2;
  m.d_model = 32;  // a multiple of 4: 2:4 groups
  m.n_head = 4;
  m.seq_len = 8;
  m.vocab_size = 64;
  return m;
}

gt::TensorLayout layout_of(const gt::ModelConfig& m) {
  return gt::TensorLayout(gt::model_tensor_specs(m, gt::StageLayout{0, 1, 0, m.n_layer}, 0, 1), 1);
}

TEST(Extensions, TopkResidualsOwnOneRowPerRank) {
  gt::Grid grid(MPI_COMM_WORLD, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::TrainState st(layout_of(tiny_model()), gt::Precision::FP32, 3);
  gt::TopkResiduals r(st);
  ASSERT_TRUE(st.has_buffer(gt::Buffer::EfResidual));
  EXPECT_EQ(r.buffers(), std::vector<gt::Buffer>{gt::Buffer::EfResidual});
  float host_copy = 0;
  gt::ExtensionIo io{grid, st, [&](gt::Buffer b) { return b == gt::Buffer::EfResidual ? &host_copy : nullptr; }};
  const std::vector<gt::TensorShard> d = r.datasets(io);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "ef_residual");  // the checkpoint format (test_state_buffers: the table's disk name)
  EXPECT_EQ(d[0].global_shape, (std::vector<int64_t>{1, int64_t(st.layout().size())}));
  EXPECT_EQ(d[0].data, &host_copy);

  gt::CheckpointMeta saved;
  saved.ints["grid.tp"] = saved.ints["grid.pp"] = saved.ints["grid.dp"] = 1;
  EXPECT_FALSE(r.restores_from(io, saved));  // no residuals in it (warns): they start at zero
  r.save_meta(saved);
  EXPECT_TRUE(r.restores_from(io, saved));  // the same layout: read back
  saved.ints["grid.dp"] = 2;
  EXPECT_FALSE(r.restores_from(io, saved));  // another layout (warns): they start at zero
}

TEST(Extensions, SparsityOwnsTheMasksOfTheMaskedTensors) {
  gt::Grid grid(MPI_COMM_WORLD, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::TrainState st(layout_of(tiny_model()), gt::Precision::FP32, 3);
  gt::SparsityConfig c;
  c.pattern = "2:4";
  gt::Sparsity sp(c, gt::SparsityRecipe::SRSTE, st);
  EXPECT_EQ(sp.buffers(), std::vector<gt::Buffer>{gt::Buffer::SparseMask});
  std::vector<float> host(st.layout().size());
  gt::ExtensionIo io{grid, st, [&](gt::Buffer) { return host.data(); }};
  std::set<std::string> names;
  for (const gt::TensorShard& t : sp.datasets(io)) {
    names.insert(t.name);
    EXPECT_EQ(t.data, host.data() + st.layout().spec(t.name.substr(12)).offset) << t.name;
  }
  std::set<std::string> expected;  // the linear layers' weights (sparsity.hpp), under "sparse_mask/"
  for (const gt::TensorSpec& s : st.layout().tensors())
    for (const char* w : {".attn.qkv.w", ".attn.proj.w", ".mlp.fc.w", ".mlp.proj.w"})
      if (s.name.size() >= std::string(w).size() && s.name.compare(s.name.size() - std::string(w).size(), std::string::npos, w) == 0)
        expected.insert("sparse_mask/" + s.name);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(names, expected);
}

}  // namespace
