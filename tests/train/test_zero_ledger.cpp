// The ZeRO memory ledger: the TrainState's actual allocations per buffer after apply_zero_plan, against the
// ZeRO paper's per-device formulas written out independently here (bytes per element: fp32 parameters 4,
// fp32 gradients 4, AdamW moments 2 x 4; K = 8 in the paper's notation for this project's fp32 training), for
// dp = 1, 2, 4 and stages 0, 1, 2 of one pipeline stage of a small model. No timing: byte counts only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "src/model/gpt.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/dp/zero.hpp"
#include "src/train/dp/zero_gather.hpp"
#include "src/train/dp/zero_grads.hpp"

namespace {
gt::ModelConfig small_model() {
  gt::ModelConfig m;
  m.n_layer = 3;
  m.d_model = 48;  // rows of 48 and 144 elements: the shards cut tensors mid-row
  m.n_head = 4;
  m.seq_len = 16;
  m.vocab_size = 101;
  return m;
}
}  // namespace

TEST(ZeroLedger, AllocationsFollowThePaper) {
  const gt::ModelConfig m = small_model();
  const gt::StageLayout whole{0, 1, 0, m.n_layer};
  for (gt::Precision prec : {gt::Precision::FP32, gt::Precision::BF16})
  for (int dp : {1, 2, 4}) {
    for (int stage : {0, 1, 2}) {
      gt::TrainState st(gt::TensorLayout(gt::model_tensor_specs(m, whole, 0, 1), dp), prec, 7);
      const size_t wb = prec == gt::Precision::FP32 ? 4 : 2;  // bytes of the working copy's elements
      const size_t psi = st.layout().size();
      ASSERT_EQ(psi % (size_t(dp) * gt::TensorLayout::kAlign), 0u);
      const gt::ZeroPlan plan(stage, st.layout(), dp - 1, dp);
      gt::apply_zero_plan(st, plan);
      const size_t nd = stage > 0 ? size_t(dp) : 1;  // dp = 1: every stage is stage 0
      // The paper: stage 1 = 4 psi + 4 psi + 8 psi / Nd, stage 2 = 4 psi + (4 + 8) psi / Nd; this project
      // keeps the full fp32 accumulation buffer at stage 2 as well (micro-batches accumulate into it).
      EXPECT_EQ(st.buffer(gt::Buffer::AdamM).bytes, 4 * psi / nd) << "dp " << dp << " stage " << stage;
      EXPECT_EQ(st.buffer(gt::Buffer::AdamV).bytes, 4 * psi / nd);
      EXPECT_EQ(st.buffer(gt::Buffer::Params).bytes, wb * psi);
      // a 16-bit run keeps the fp32 master, sharded like the moments, with the initial values of its shard
      EXPECT_EQ(st.has_buffer(gt::Buffer::Master), wb != 4);
      if (st.has_buffer(gt::Buffer::Master)) {
        EXPECT_EQ(st.buffer(gt::Buffer::Master).bytes, 4 * psi / nd);
        std::vector<float> init(psi);
        gt::initial_params(st.layout(), 7, init.data());
        const gt::Range e = st.buffer(gt::Buffer::Master).extent;
        EXPECT_EQ(std::memcmp(st.master(), init.data() + e.begin, e.size() * sizeof(float)), 0);
      }
      EXPECT_EQ(st.buffer(gt::Buffer::Grads).bytes, 4 * psi);
      EXPECT_EQ(st.has_buffer(gt::Buffer::GradsShard), stage == 2 && dp > 1);
      if (st.has_buffer(gt::Buffer::GradsShard)) {
        EXPECT_EQ(st.buffer(gt::Buffer::GradsShard).bytes, 4 * psi / dp);
      }
      // The ledger's arithmetic equals what was allocated, and its total equals the buffers' sum.
      const gt::StateLedger pred = gt::predicted_state_bytes(psi, dp, plan.stage, wb);
      const gt::StateLedger have = gt::allocated_state_bytes(st);
      EXPECT_EQ(pred.params, have.params);
      EXPECT_EQ(pred.grads, have.grads);
      EXPECT_EQ(pred.optimizer, have.optimizer);
      EXPECT_EQ(have.total(), st.bytes());
      // The sharded part falls as 1/dp: the last rank's shard is the padded layout's last 1/dp.
      EXPECT_EQ(st.buffer(gt::Buffer::AdamM).extent.end, psi);
      EXPECT_EQ(st.buffer(gt::Buffer::AdamM).extent.begin, plan.sharded() ? psi - psi / dp : 0);
    }
  }
}

TEST(ZeroLedger, ShardCountsCoverABucketOnce) {
  const gt::ModelConfig m = small_model();
  const gt::StageLayout whole{0, 1, 0, m.n_layer};
  const gt::TensorLayout layout(gt::model_tensor_specs(m, whole, 0, 1), 4);
  const size_t n = layout.size();
  // buckets inside one shard, across two, across all, and empty
  for (gt::Range b : {gt::Range{3, 17}, gt::Range{n / 4 - 5, n / 4 + 9}, gt::Range{1, n - 1}, gt::Range{9, 9}}) {
    const auto counts = gt::shard_counts(layout, b);
    size_t sum = 0;
    for (int r = 0; r < 4; ++r) {
      const gt::Range s = layout.shard_range(r);
      size_t naive = 0;  // element by element
      for (size_t i = b.begin; i < b.end; ++i) naive += i >= s.begin && i < s.end;
      EXPECT_EQ(counts[r], naive);
      sum += counts[r];
    }
    EXPECT_EQ(sum, b.size());
  }
  EXPECT_THROW(gt::ZeroPlan(4, layout, 0, 4), std::exception);
  // dp = 1: every stage is allowed and runs as stage 0; the start line says so.
  const gt::TensorLayout one(gt::model_tensor_specs(m, whole, 0, 1), 1);
  for (int z : {1, 2, 3}) {
    const gt::ZeroPlan p(z, one, 0, 1);
    EXPECT_EQ(p.stage, 0);
    EXPECT_NE(p.describe().find("dp=1: nothing to shard, runs as zero 0"), std::string::npos) << p.describe();
  }
  EXPECT_THROW(gt::ZeroPlan(-1, layout, 0, 4), std::exception);
}

// ZeRO-3: the working copy falls to a shard plus two gather buffers, of the largest and the second largest unit
// (computed here from the tensor offsets), in the working type (fp32, or bf16 with the fp32 master sharded as at
// stage 1); gradients and moments as at stage 2 (the full buffer: no staging is built here). Allocations counted by the TrainState, not timed. (For this 3-block model two
// gathered units are more than half of it: the saving needs many units and large dp.)
template <class T>
void check_stage_three(gt::Precision prec) {
  const gt::ModelConfig m = small_model();
  const gt::StageLayout whole{0, 1, 0, m.n_layer};
  gt::Grid grid(MPI_COMM_SELF, 1, 1, 1, gt::AllreduceAlgo::Library);  // the gather's comm: not used to build it
  const size_t wb = sizeof(T);
  for (int dp : {2, 4}) {
    const std::vector<gt::TensorSpec> specs = gt::model_tensor_specs(m, whole, 0, 1);
    gt::TrainState st(gt::TensorLayout(specs, dp), prec, 7);
    const size_t psi = st.layout().size();
    // host copies through mirrors: the state lives in device memory on a GPU build
    gt::HostMirror<T> all(static_cast<T*>(st.params()), psi);
    all.pull();
    std::vector<T> before(all.data(), all.data() + psi);
    const gt::ZeroPlan plan(3, st.layout(), 1, dp);
    gt::apply_zero_plan(st, plan);
    gt::GPT<T> model(m, 7, 1, whole, gt::TensorParallel{}, 1, &st.layout());
    model.bind(st.params(), st.grads());
    gt::ZeroGather gather(st, plan, grid.dp());
    model.set_unit_io(gt::UnitIO{&gather, nullptr, 0});
    // The largest unit: in a one-stage model each unit is one run of tensors in storage, from its first
    // tensor's offset to its last one's end.
    std::map<int, std::pair<size_t, size_t>> span;
    for (const gt::TensorSpec& t : st.layout().tensors()) {
      auto [it, fresh] = span.try_emplace(t.unit, t.offset, t.offset + t.size);
      it->second.first = std::min(it->second.first, t.offset);
      it->second.second = std::max(it->second.second, t.offset + t.size);
    }
    // The buffers: the largest unit and the second largest (never two copies of the largest).
    std::vector<size_t> sizes;
    for (const auto& [u, r] : span) sizes.push_back(r.second - r.first);
    std::sort(sizes.rbegin(), sizes.rend());
    ASSERT_GE(sizes.size(), 2u);
    EXPECT_EQ(gather.buffer_elems(), sizes[0] + sizes[1]);
    EXPECT_EQ(st.buffer(gt::Buffer::Params).bytes, wb * psi / dp) << "dp " << dp;
    EXPECT_EQ(st.buffer(gt::Buffer::Gather0).bytes, wb * sizes[0]);
    EXPECT_EQ(st.buffer(gt::Buffer::Gather1).bytes, wb * sizes[1]);
    EXPECT_EQ(st.has_buffer(gt::Buffer::Master), wb != 4);
    if (st.has_buffer(gt::Buffer::Master)) {
      EXPECT_EQ(st.buffer(gt::Buffer::Master).bytes, 4 * psi / dp);
    }
    EXPECT_EQ(st.buffer(gt::Buffer::GradsShard).bytes, 4 * psi / dp);
    EXPECT_EQ(st.buffer(gt::Buffer::AdamM).bytes, 4 * psi / dp);
    const gt::StateLedger pred = gt::predicted_state_bytes(psi, dp, 3, wb, gather.buffer_elems());
    const gt::StateLedger have = gt::allocated_state_bytes(st);
    EXPECT_EQ(pred.params, have.params);
    EXPECT_EQ(pred.grads, have.grads);
    EXPECT_EQ(pred.optimizer, have.optimizer);
    EXPECT_EQ(have.total(), st.bytes());
    // The shard kept its values: rank 1's elements of the initial working copy.
    auto shard_now = [&] {
      gt::HostMirror<T> m(static_cast<T*>(st.params()), plan.shard.size());
      m.pull();
      return std::vector<T>(m.data(), m.data() + plan.shard.size());
    };
    EXPECT_EQ(std::memcmp(shard_now().data(), before.data() + plan.shard.begin, plan.shard.size() * wb), 0);
    // refresh_params writes the working shard at its own offsets (the extent starts at the shard).
    st.refresh_params(plan.shard);
    EXPECT_EQ(std::memcmp(shard_now().data(), before.data() + plan.shard.begin, plan.shard.size() * wb), 0);
    // Nothing gathered yet: a read throws instead of reading a shard as if it were the tensor.
    EXPECT_THROW(model.store().param("h.0.ln_1.w"), std::exception);
  }
}

// The units as the model and ZeRO see them (src/model/units.hpp), checked against the tensor offsets: with row
// chunks wte leaves the embedding unit (wpe alone then) and its rows [0, V) are covered once, in order, by chunks
// of chunk_rows rows (the last shorter), ids -2, -3, ..., each one range of wte's elements; without, wte is in the
// embedding unit with wpe, packed at their distance in storage.
TEST(ZeroLedger, RowChunksCoverWteOnce) {
  const gt::ModelConfig m = small_model();
  const gt::TensorLayout layout(gt::model_tensor_specs(m, gt::StageLayout{0, 1, 0, m.n_layer}, 0, 1), 2);
  const gt::TensorSpec& wte = layout.spec("wte");
  const size_t rows = size_t(wte.local_shape().front()), cols = size_t(wte.local_shape().back());
  const size_t chunk_rows = rows / 3 + 1;  // three chunks, the last shorter
  const std::map<int, gt::UnitSpan> chunked = gt::unit_spans(layout, chunk_rows);
  size_t next_row = 0;
  int c = 0;
  for (; chunked.count(gt::row_chunk_unit(c)); ++c) {
    const gt::UnitSpan& u = chunked.at(gt::row_chunk_unit(c));
    EXPECT_EQ(u.row_begin, next_row);
    EXPECT_EQ(u.row_end, std::min(rows, next_row + chunk_rows));
    ASSERT_EQ(u.ranges.size(), 1u);
    EXPECT_EQ(u.ranges[0].begin, wte.offset + u.row_begin * cols);
    EXPECT_EQ(u.elems, (u.row_end - u.row_begin) * cols);
    EXPECT_TRUE(u.tensors.empty());
    next_row = u.row_end;
  }
  EXPECT_EQ(c, 3);
  EXPECT_EQ(next_row, rows);
  const gt::UnitSpan& embed = chunked.at(wte.unit);
  ASSERT_EQ(embed.tensors.size(), 1u);
  EXPECT_EQ(layout.tensors()[embed.tensors[0]].name, "wpe");
  const gt::UnitSpan& whole = gt::unit_spans(layout).at(wte.unit);
  ASSERT_EQ(whole.tensors.size(), 2u);  // wte, wpe
  EXPECT_EQ(whole.packed[1], layout.spec("wpe").offset - wte.offset);
  EXPECT_FALSE(gt::unit_spans(layout).count(gt::row_chunk_unit(0)));
}

TEST(ZeroLedger, StageThreeShardsTheParametersFp32) { check_stage_three<float>(gt::Precision::FP32); }
TEST(ZeroLedger, StageThreeShardsTheParametersBf16) { check_stage_three<gt::bf16_t>(gt::Precision::BF16); }

// ZeRO-2/3 with one micro-batch on one pipeline stage: the full fp32 gradient buffer is gone. The gradients
// are the reduced shard plus the staging: the unit holding the tied wte (written by the head's forward and
// the embedding's backward, so kept for the whole step) and two rotating buffers of the largest other unit,
// computed here from the tensor offsets. An implementation that allocates the full buffer again fails here
// (and test_zero checks the trainer's state). Byte counts only.
TEST(ZeroLedger, StagedGradientsReplaceTheFullBuffer) {
  const gt::ModelConfig m = small_model();
  const gt::StageLayout whole{0, 1, 0, m.n_layer};
  for (int stage : {2, 3})
  for (int dp : {2, 4}) {
    gt::TrainState st(gt::TensorLayout(gt::model_tensor_specs(m, whole, 0, 1), dp), gt::Precision::FP32, 7);
    const size_t psi = st.layout().size();
    const gt::ZeroPlan plan(stage, st.layout(), 0, dp);
    gt::apply_zero_plan(st, plan);
    ASSERT_TRUE(gt::ZeroGradStaging::applies(plan, 1, 1));
    EXPECT_FALSE(gt::ZeroGradStaging::applies(plan, 2, 1));  // micro-batches accumulate in the full buffer
    EXPECT_FALSE(gt::ZeroGradStaging::applies(plan, 1, 2));  // the tied wte is summed across stages first
    EXPECT_FALSE(gt::ZeroGradStaging::applies(gt::ZeroPlan(1, st.layout(), 0, dp), 1, 1));
    gt::GPT<float> model(m, 7, 1, whole, gt::TensorParallel{}, 1, &st.layout());
    model.bind(st.params(), st.grads());
    gt::ZeroGradStaging staging(st, plan);
    EXPECT_FALSE(st.has_buffer(gt::Buffer::Grads)) << "stage " << stage << " dp " << dp;
    std::map<int, std::pair<size_t, size_t>> span;  // per unit: first offset, last end (one run per unit here)
    for (const gt::TensorSpec& t : st.layout().tensors()) {
      auto [it, fresh] = span.try_emplace(t.unit, t.offset, t.offset + t.size);
      it->second.first = std::min(it->second.first, t.offset);
      it->second.second = std::max(it->second.second, t.offset + t.size);
    }
    const int tied = st.layout().spec("wte").unit;
    size_t other = 0;
    for (const auto& [u, r] : span)
      if (u != tied) other = std::max(other, r.second - r.first);
    const size_t tied_elems = span[tied].second - span[tied].first;
    EXPECT_EQ(staging.elems(), tied_elems + 2 * other);
    const gt::StateLedger have = gt::allocated_state_bytes(st);
    EXPECT_EQ(have.grads, 4 * (psi / dp + tied_elems + 2 * other));
    const gt::StateLedger pred = gt::predicted_state_bytes(psi, dp, stage, 4, 0, staging.elems());
    EXPECT_EQ(pred.params, have.params);
    EXPECT_EQ(pred.grads, have.grads);
    EXPECT_EQ(pred.optimizer, have.optimizer);
    EXPECT_EQ(have.total(), st.bytes());
    // Given the staging as its gradient sink, the model writes no gradient it has not asked the sink for.
    model.set_unit_io(gt::UnitIO{nullptr, &staging, 0});
    EXPECT_THROW(model.store().grad("ln_f.w"), std::exception);
    // Only staged units are writable: before the step none; then the head and the tied unit, not a block.
    const int head = st.layout().spec("ln_f.w").unit;
    EXPECT_THROW(staging.grads(head), std::exception);
    staging.begin_step();
    EXPECT_NO_THROW(staging.grads(head));
    EXPECT_NO_THROW(staging.grads(tied));
    EXPECT_THROW(staging.grads(st.layout().spec("h.0.ln_1.w").unit), std::exception);
  }
}

// The state allocated as shards directly (state_extents) holds the same bytes as the full state sharded after
// the fact (apply_zero_plan), and the same values: the initial values computed for the shard only (in chunks)
// equal the whole layout's, and a 16-bit working copy rounded straight from them equals one rounded from the
// fp32 master. Every stage, dp = 2 and 4, fp32 and bf16, one rank's shard in the middle of the layout.
TEST(ZeroLedger, ShardsAllocatedDirectlyEqualShardedAfter) {
  const gt::ModelConfig m = small_model();
  const gt::StageLayout whole{0, 1, 0, m.n_layer};
  for (gt::Precision prec : {gt::Precision::FP32, gt::Precision::BF16})
  for (int dp : {2, 4})
  for (int stage : {0, 1, 2, 3}) {
    const gt::TensorLayout layout(gt::model_tensor_specs(m, whole, 0, 1), dp);
    const gt::ZeroPlan plan(stage, layout, 1, dp);
    gt::TrainState after(layout, prec, 7);
    gt::apply_zero_plan(after, plan);
    gt::TrainState direct(layout, prec, 7, gt::state_extents(plan, layout.size(), false));
    gt::apply_zero_plan(direct, plan);  // adds the reduced-gradient shard; the rest is sharded already
    for (const gt::BufferInfo& info : gt::buffer_table()) {  // every buffer there is
      const char* name = info.name;
      ASSERT_EQ(after.has_buffer(info.id), direct.has_buffer(info.id)) << name;
      if (!after.has_buffer(info.id)) continue;
      const gt::StateBuffer& a = after.buffer(info.id);
      const gt::StateBuffer& d = direct.buffer(info.id);
      EXPECT_EQ(a.extent.begin, d.extent.begin) << name << " stage " << stage << " dp " << dp;
      ASSERT_EQ(a.bytes, d.bytes) << name;
      EXPECT_EQ(std::memcmp(a.data, d.data, a.bytes), 0) << name << " stage " << stage << " dp " << dp;
    }
  }
}
