// The TrainExtension seam (src/train/extensions/extension.hpp, issue 20 Debt 3) as the Checkpointer sees it: what each
// extension adds to the state, which checkpoint datasets it owns (names from the buffer table, shapes from the
// layout, written independently here), and when top-k's residuals are restored; the loss scaler's meta entries and
// summary fields, and the 16-bit working copy HalfMasters rounds from the masters. That the saved and resumed
// values continue bit for bit is checked end to end by test_sparsity (masks), compress_train (residuals) and
// cli_restart's bitwise_scaler, bitwise_bf16 and bitwise_fp16 (the scaler's counters, the 16-bit working copy).
#include <gtest/gtest.h>

#include <mpi.h>

#include <set>
#include <string>

#include "src/model/gpt.hpp"
#include "src/train/extensions/half_masters.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/extensions/loss_scaler.hpp"
#include "src/train/extensions/sparsity.hpp"
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

TEST(Extensions, LossScalerOwnsItsMetaEntriesAndSummaryFields) {
  gt::TrainConfig t;
  t.loss_scale_initial = 1024;
  t.loss_scale_window = 100;
  t.loss_scale_hysteresis = 2;
  gt::LossScaler s(t, true);
  EXPECT_TRUE(s.buffers().empty());
  s.update(false, 1);
  s.update(false, 2);
  s.update(true, 3);  // one unit of hysteresis used: the scale stays
  gt::CheckpointMeta saved;
  s.save_meta(saved);  // the keys on disk (old checkpoints name them so)
  EXPECT_EQ(saved.reals.at("loss_scale"), 1024);
  EXPECT_EQ(saved.ints.at("loss_scale.clean_steps"), 0);
  EXPECT_EQ(saved.ints.at("loss_scale.hysteresis_left"), 1);

  gt::LossScaler resumed(t, true);
  resumed.load_meta(saved);
  EXPECT_EQ(resumed.state().hysteresis_left, 1);
  EXPECT_TRUE(resumed.update(true, 4));  // the hysteresis was used up before: this overflow backs off
  EXPECT_EQ(resumed.scale(), 512);
  resumed.load_meta(gt::CheckpointMeta{});  // a checkpoint of a run without the scaler: its initial state
  EXPECT_EQ(resumed.scale(), 1024);
  EXPECT_EQ(resumed.state().hysteresis_left, 2);

  gt::JsonObject j;
  resumed.report(j);
  EXPECT_EQ(j.dump(), gt::JsonObject().str("loss_scaling", "dynamic").num("loss_scale", 1024).dump());

  gt::LossScaler off(t, false);  // train.loss_scale = none: no meta entry, scale 1
  gt::CheckpointMeta none;
  off.save_meta(none);
  EXPECT_TRUE(none.reals.empty() && none.ints.empty());
  gt::JsonObject k;
  off.report(k);
  EXPECT_EQ(k.dump(), gt::JsonObject().str("loss_scaling", "none").num("loss_scale", 1).dump());
}

// The working copy HalfMasters writes is the masters rounded to nearest even (kernels/half.hpp), after an update
// and after a load alike; an fp32 state has no separate masters to round.
TEST(Extensions, HalfMastersRoundTheWorkingCopyFromTheMasters) {
  gt::Grid grid(MPI_COMM_WORLD, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::TrainState fp32(layout_of(tiny_model()), gt::Precision::FP32, 3);
  EXPECT_THROW(gt::HalfMasters(fp32, gt::ZeroPlan{}, grid.dp()), std::exception);

  gt::TrainState st(layout_of(tiny_model()), gt::Precision::BF16, 3);
  const size_t n = st.layout().size();
  gt::ZeroPlan zero;
  zero.shard = gt::Range{0, n};
  gt::HalfMasters h(st, zero, grid.dp());
  EXPECT_TRUE(h.buffers().empty());
  gt::HostMirror<float> master(st.master(), n);
  gt::HostMirror<gt::bf16_t> working(st.data<gt::bf16_t>(gt::Buffer::Params), n);
  auto check = [&](float offset, auto&& hook) {
    master.pull();
    for (size_t i = 0; i < n; ++i) master.data()[i] = offset + float(i) / 3.0f;  // not representable in bf16
    master.push();
    hook();
    Kokkos::fence();
    working.pull();
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(working.data()[i].bits, gt::bf16_t(master.data()[i]).bits) << "element " << i;
  };
  check(1.0f, [&] { h.after_update(1); });
  check(-7.0f, [&] { h.on_resume(); });
}

}  // namespace
