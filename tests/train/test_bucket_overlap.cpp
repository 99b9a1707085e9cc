// Compressed DP buckets overlapped with backward (issue 11) against the non-overlapped path: GradBuckets with
// Compression::overlap launches each top-k bucket from unit_done as soon as backward completes it; with
// overlap = false every bucket is compressed and sent in finish(), after all of backward (the path before the
// overlap). Both must leave the same gradient sums and the same residuals, bit for bit: the same selection,
// the same collectives in the same order, only earlier. Backward is simulated: a unit's gradient is written
// just before its unit_done, every other entry is NaN until then, so a bucket launched before its gradient is
// final shows up as NaN in the sums. Two steps, so the second reads the first's residuals and another leader.
// Values fp32, bf16 and fp16; transports auto (dense or all-gather by bytes), all-gather and shared-index.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/train/dp/grad_buckets.hpp"

namespace {

namespace gc = gt::compress;

// Tensors of odd sizes over units 0..5 in storage order (the order of a model's layout); a tensor's unit
// completes in backward from the highest down.
std::vector<gt::TensorSpec> tensors() {
  const size_t sizes[] = {1001, 37, 5003, 2, 777, 4099, 13, 3001, 64, 999};
  std::vector<gt::TensorSpec> t;
  size_t off = 0;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    gt::TensorSpec s;
    s.name = "t" + std::to_string(i);
    s.offset = off;
    s.size = sizes[i];
    s.unit = int(i * 6 / std::size(sizes));
    off += sizes[i];
    t.push_back(s);
  }
  return t;
}

float grad_of(int rank, int step, size_t i) {
  std::mt19937 g(uint32_t(1 + rank * 7919 + step * 104729 + i * 31));
  return std::normal_distribution<float>(0.f, 1.f)(g) * (i % 97 == 0 ? 50.f : 1.f);  // a few large entries
}

struct Outcome {
  std::vector<float> grads, residual;
  size_t launched_before_finish = 0;
};

Outcome simulate(gt::Comm& dp, const gc::TopkOptions& topk, double density, bool overlap) {
  const auto ts = tensors();
  const size_t n = ts.back().offset + ts.back().size;
  gt::GradBuckets b(ts, 6000 * sizeof(float), sizeof(float));  // several buckets, some of several tensors
  Outcome r;
  r.residual.assign(n, 0.0f);
  gt::GradBuckets::Compression c;
  c.topk = topk;
  c.density = density;
  c.residual = r.residual.data();
  c.overlap = overlap;
  b.set_compression(c);
  for (int step = 0; step < 2; ++step) {
    r.grads.assign(n, std::numeric_limits<float>::quiet_NaN());
    b.begin_step(step, 1.0);
    for (int u = 5; u >= 0; --u) {
      for (const auto& t : ts)
        if (t.unit == u)
          for (size_t i = t.offset; i < t.offset + t.size; ++i) r.grads[i] = grad_of(dp.rank(), step, i);
      b.unit_done(u, dp, r.grads.data());
    }
    r.launched_before_finish = b.launched();
    b.finish(dp, r.grads.data());
  }
  return r;
}

TEST(BucketOverlap, CompressedBucketsOverlapBitwiseAsInFinish) {
  auto dp = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  for (gt::DType v : {gt::DType::F32, gt::DType::BF16, gt::DType::F16}) {
    for (int tr = 0; tr < 3; ++tr) {
      for (double density : {0.04, 0.6}) {  // 0.6: the chooser takes dense for every bucket (auto)
        gc::TopkOptions o;
        o.values = v;
        o.force = tr > 0;
        o.forced = tr == 1 ? gc::Transport::AllGather : gc::Transport::Shared;
        const std::string what = "values " + std::to_string(int(v)) + " transport " + std::to_string(tr) +
                                 " density " + std::to_string(density);
        const Outcome a = simulate(*dp, o, density, true), ref = simulate(*dp, o, density, false);
        // the overlapped run launched buckets during backward (all but those holding unit 0), the other none
        EXPECT_GT(a.launched_before_finish, 0u) << what;
        EXPECT_EQ(ref.launched_before_finish, 0u) << what;
        ASSERT_EQ(a.grads.size(), ref.grads.size());
        size_t nan = 0;
        for (float g : a.grads) nan += std::isnan(g);
        EXPECT_EQ(nan, 0u) << what << ": a bucket was compressed before its gradient was final";
        EXPECT_EQ(0, std::memcmp(a.grads.data(), ref.grads.data(), a.grads.size() * sizeof(float))) << what;
        EXPECT_EQ(0, std::memcmp(a.residual.data(), ref.residual.data(), a.residual.size() * sizeof(float))) << what;
      }
    }
  }
}

}  // namespace
