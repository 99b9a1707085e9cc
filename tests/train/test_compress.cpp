// Top-k compression (src/train/compress) against independent references: a naive full sort for the selection,
// sums in double of every rank's regenerated data for the transports, the closed-form crossover d < 1/P
// (REFERENCES.md) for the chooser. Runs on 2, 3 and 4 ranks with odd bucket sizes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/half.hpp"
#include "src/core/error.hpp"
#include "src/train/compress/topk_allreduce.hpp"

namespace gc = gt::compress;

namespace {

int rank_of() { int r = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
int size_of() { int p = 1; MPI_Comm_size(MPI_COMM_WORLD, &p); return p; }

// A rank's gradient (or residual, scaled) for a bucket of n: deterministic in (rank, n, salt), with ties (values
// on a grid of 1/256) so the tie rule is exercised.
std::vector<float> data_of(int rank, size_t n, int salt, float scale = 1.0f) {
  std::mt19937_64 g(99 + 7919 * rank + 31 * n + 1000003 * salt);
  std::uniform_int_distribution<int> u(-512, 512);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * float(u(g)) / 256.0f;
  return v;
}

// Naive top-k: every index sorted by (|x| descending, index ascending), NaN first; the first k, ascending.
std::vector<int32_t> naive_topk(const std::vector<float>& x, size_t k) {
  std::vector<int32_t> i(x.size());
  std::iota(i.begin(), i.end(), 0);
  auto key = [&](int32_t a) { return std::isnan(x[a]) ? std::numeric_limits<double>::infinity() : std::fabs(double(x[a])); };
  std::stable_sort(i.begin(), i.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
  i.resize(std::min(k, x.size()));
  std::sort(i.begin(), i.end());
  return i;
}

// acc = fl(grad + residual), as the definition of error feedback says
std::vector<float> acc_of(int rank, size_t n, int salt) {
  auto g = data_of(rank, n, salt), r = data_of(rank, n, salt + 1, 0.25f);
  for (size_t i = 0; i < n; ++i) g[i] += r[i];
  return g;
}

// x as the wire carries it with values of type t: float(V(x)), V = fp32, bf16, fp16 (RNE, kernels/half.hpp,
// itself tested against the hardware's conversions in tests/kernels)
float as_wire(float x, gt::DType t) {
  if (t == gt::DType::BF16) return float(gt::bf16_t(x));
  if (t == gt::DType::F16) return float(gt::fp16_t(x));
  return x;
}
// The unit roundoff of each value type: half an ulp relative, 2^-24 (fp32), 2^-8 (bf16), 2^-11 (fp16)
int roundoff_exp(gt::DType t) { return t == gt::DType::BF16 ? -8 : t == gt::DType::F16 ? -11 : -24; }
const gt::DType kValues[] = {gt::DType::F32, gt::DType::BF16, gt::DType::F16};

void expect_same_on_all_ranks(const std::vector<float>& v, const char* what) {
  std::vector<float> root(v);
  MPI_Bcast(root.data(), int(v.size() * sizeof(float)), MPI_BYTE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(0, v.empty() ? 0 : std::memcmp(root.data(), v.data(), v.size() * sizeof(float))) << what << ": ranks differ";
}

const size_t kSizes[] = {1, 7, 1001, 65537, 100003};  // 65537 and up take the sampled path's sampling branch

}  // namespace

TEST(Compress, TopkCount) {
  EXPECT_EQ(gc::topk_count(0, 0.04), 0u);
  EXPECT_EQ(gc::topk_count(10, 0.04), 1u);     // at least one entry
  EXPECT_EQ(gc::topk_count(1000, 0.04), 40u);
  EXPECT_EQ(gc::topk_count(1001, 0.04), 41u);  // ceil(40.04)
  EXPECT_EQ(gc::topk_count(5, 1.0), 5u);
}

// DGC's schedule: 25% at step 0, the target from warmup_steps on, each step a constant factor below the one
// before (geometric), never below the target
TEST(Compress, DensityWarmup) {
  EXPECT_DOUBLE_EQ(gc::warmup_density(0, 100, 0.001), 0.25);
  EXPECT_DOUBLE_EQ(gc::warmup_density(100, 100, 0.001), 0.001);
  EXPECT_DOUBLE_EQ(gc::warmup_density(5000, 100, 0.001), 0.001);
  EXPECT_NEAR(gc::warmup_density(50, 100, 0.01), std::sqrt(0.25 * 0.01), 1e-12);  // halfway: geometric mean
  EXPECT_DOUBLE_EQ(gc::warmup_density(0, 0, 0.04), 0.04);   // no warm-up
  EXPECT_DOUBLE_EQ(gc::warmup_density(3, 100, 0.5), 0.5);   // a target above 25% needs none
  const double ratio = gc::warmup_density(11, 100, 0.001) / gc::warmup_density(10, 100, 0.001);
  for (long s = 1; s < 100; ++s)
    EXPECT_NEAR(gc::warmup_density(s, 100, 0.001) / gc::warmup_density(s - 1, 100, 0.001), ratio, 1e-9) << s;
}

TEST(Compress, ExactSelectionMatchesNaiveSort) {
  for (size_t n : kSizes) {
    auto x = data_of(rank_of(), n, 1);
    if (n > 3) x[n / 2] = std::numeric_limits<float>::quiet_NaN();  // a NaN gradient must be sent
    for (double d : {0.001, 0.04, 0.3, 1.0}) {
      const size_t k = gc::topk_count(n, d);
      std::vector<int32_t> got;
      gc::select_exact(x.data(), n, k, got);
      EXPECT_EQ(got, naive_topk(x, k)) << "n=" << n << " d=" << d;
    }
  }
}

TEST(Compress, SampledSelectionIsTopMWithinDgcBounds) {
  for (size_t n : {size_t(65537), size_t(200003)}) {
    // continuous values here: with a coarse grid the threshold cannot split ties finely enough
    std::mt19937_64 g(5 + n);
    std::normal_distribution<float> u(0.f, 1.f);
    std::vector<float> x(n);
    for (auto& v : x) v = u(g);
    for (double d : {0.001, 0.01, 0.04}) {
      const size_t k = gc::topk_count(n, d);
      std::vector<int32_t> got, again;
      gc::select_sampled(x.data(), n, k, 42, got);
      gc::select_sampled(x.data(), n, k, 42, again);
      EXPECT_EQ(got, again) << "the same seed must give the same selection";
      const size_t m = got.size();
      EXPECT_GE(m, (k * 4 + 4) / 5) << "n=" << n << " d=" << d;  // DGC's lower bound 0.8k
      EXPECT_LE(m, k);
      EXPECT_EQ(got, naive_topk(x, m)) << "not the top-" << m << " set, n=" << n << " d=" << d;
    }
  }
}

// sent + new residual == grad + old residual, exactly, for every entry, with each wire value type
template <class V>
void check_error_feedback_loses_nothing() {
  for (size_t n : kSizes) {
    const auto grad = data_of(rank_of(), n, 3), old = data_of(rank_of(), n, 4, 0.25f);
    auto res = old;
    gc::ErrorFeedback ef(res.data(), n);
    const float* acc = ef.accumulate(grad.data());
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = grad[i] + old[i];
    std::vector<int32_t> idx;
    gc::select_exact(acc, n, gc::topk_count(n, 0.04), idx);
    std::vector<V> val(idx.size());
    ef.take(idx.data(), idx.size(), val.data());
    std::vector<float> sent(n, 0.0f);
    for (size_t j = 0; j < idx.size(); ++j) sent[idx[j]] = float(val[j]);
    size_t bad = 0, rounded = 0;
    for (size_t i = 0; i < n; ++i) bad += (sent[i] + ef.residual()[i]) != want[i];
    for (size_t j = 0; j < idx.size(); ++j) rounded += ef.residual()[idx[j]] != 0.0f;
    EXPECT_EQ(bad, 0u) << "n=" << n << " value bytes " << sizeof(V);
    // the data have up to 12 significant bits: a 16-bit value leaves its rounding error in the residual
    if (sizeof(V) == 2 && n > 100) {
      EXPECT_GT(rounded, 0u) << "n=" << n;
    }
  }
}

TEST(Compress, ErrorFeedbackLosesNothing) {
  check_error_feedback_loses_nothing<float>();
  check_error_feedback_loses_nothing<gt::bf16_t>();
  check_error_feedback_loses_nothing<gt::fp16_t>();
}

// fp16 overflows at 65520: a finite entry beyond is sent as +-65504 and the excess stays in the residual
// (exact up to 2 x 65504); inf and NaN are sent as they are, not hidden in the residual
TEST(Compress, Fp16ValuesSaturate) {
  std::vector<float> r = {1.0e5f, -70000.5f, 65519.0f, std::numeric_limits<float>::infinity(), std::nanf("")};
  const std::vector<float> a = r;
  gc::ErrorFeedback ef(r.data(), r.size());
  const std::vector<int32_t> idx = {0, 1, 2, 3, 4};
  std::vector<gt::fp16_t> v(idx.size());
  ef.take(idx.data(), idx.size(), v.data());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(std::fabs(float(v[i])), 65504.0f) << i;
    EXPECT_EQ(float(v[i]) + r[i], a[i]) << i;
  }
  EXPECT_TRUE(std::isinf(float(v[3])));
  EXPECT_TRUE(std::isnan(float(v[4])));
}

// The chooser against the closed form: with fp32 values, top-k by all-gather sends fewer bytes than a dense
// fp32 ring all-reduce exactly while d < 1/P; shared-index while d < 1/2 (REFERENCES.md, docs/compression.md).
TEST(Compress, ChooserFollowsTheFormula) {
  const size_t n = size_t(1) << 22;
  // REFERENCES.md: at P = 8 the seed's 4% moves 0.32x the bytes of fp32 dense, 0.64x of bf16 dense
  const size_t k = gc::topk_count(n, 0.04);
  const auto w4 = gc::wire_bytes(8, n, k, 4), w2 = gc::wire_bytes(8, n, k, 2);
  EXPECT_NEAR(w4.allgather / w4.dense, 0.32, 1e-5);  // k = ceil(0.04 n) adds at most 1/n
  EXPECT_NEAR(w4.allgather / w2.dense, 0.64, 1e-5);
  EXPECT_GT(gc::wire_bytes(64, n, k, 4).allgather, gc::wire_bytes(64, n, k, 4).dense);  // "at P = 64 more"
  for (int p : {2, 3, 4, 8, 16, 64}) {
    for (double d = 0.0005; d <= 1.0; d *= 1.07) {
      if (std::fabs(d - 1.0 / p) < 1e-3 || std::fabs(d - 0.5) < 1e-3) continue;  // k's rounding decides there
      const size_t kk = gc::topk_count(n, d);
      const auto no_shared = gc::choose_transport(p, n, kk, 4, false);
      EXPECT_EQ(no_shared, d < 1.0 / p ? gc::Transport::AllGather : gc::Transport::Dense) << "P=" << p << " d=" << d;
      const auto with_shared = gc::choose_transport(p, n, kk, 4, true);
      gc::Transport want = gc::Transport::Dense;
      if (d < 0.5) want = p == 2 ? gc::Transport::AllGather : gc::Transport::Shared;  // equal bytes at P = 2
      EXPECT_EQ(with_shared, want) << "P=" << p << " d=" << d;
      // 16-bit values (REFERENCES.md: 0.67/P against a 16-bit dense all-reduce): all-gather while
      // 6k(P-1) < 2(P-1)/P 2n, i.e. d < 2/(3P); shared while 2(P-1)/P 6k < 2(P-1)/P 2n, i.e. d < 1/3
      if (std::fabs(d - 2.0 / (3 * p)) < 1e-3 || std::fabs(d - 1.0 / 3) < 1e-3) continue;
      const auto want16 = d < 2.0 / (3 * p) ? gc::Transport::AllGather : gc::Transport::Dense;
      EXPECT_EQ(gc::choose_transport(p, n, kk, 2, false), want16) << "16-bit P=" << p << " d=" << d;
      gc::Transport want2 = gc::Transport::Dense;
      if (d < 1.0 / 3) want2 = d < 2.0 / (3 * p) && p == 2 ? gc::Transport::AllGather : gc::Transport::Shared;
      // at P = 2: all-gather 6k, shared 6k: equal, the tie goes to all-gather (checked first)
      EXPECT_EQ(gc::choose_transport(p, n, kk, 2, true), want2) << "16-bit shared P=" << p << " d=" << d;
    }
  }
  // the formulas themselves, 16-bit values at P = 4: dense 2(3/4) 2n, all-gather 3 (2 + 4) k, shared 1.5 (4 + 2) k
  const auto w = gc::wire_bytes(4, 1000, 10, 2);
  EXPECT_EQ(w.dense, 3000.0);
  EXPECT_EQ(w.allgather, 180.0);
  EXPECT_EQ(w.shared, 90.0);
}

// Both transports (and the dense fall-back) give the reference sums, leave the right residual, and the same
// bits on every rank. Reference: every rank's acc regenerated here, its top-k by naive sort, summed in double.
TEST(Compress, TransportsMatchDoubleReference) {
  const int p = size_of(), me = rank_of();
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  for (gt::DType v : kValues) {
    for (bool shared : {false, true}) {
      for (gc::Select how : {gc::Select::Exact, gc::Select::Sampled}) {
        if (v != gt::DType::F32 && how == gc::Select::Sampled) continue;  // the selection does not see V: once
        for (size_t n : kSizes) {
          for (double d : {0.01, 0.04, 0.3, 1.0}) {
            if (v != gt::DType::F32 && (d == 0.01 || d == 0.3)) continue;  // 16-bit: sparse and dense once each
            gc::TopkOptions o;
            o.density = d;
            o.select = how;
            o.allow_shared = shared;
            o.leader = 1 % p;
            o.seed = 17 + n;
            o.values = v;
            auto residual = data_of(me, n, 11, 0.25f);
            gc::ErrorFeedback ef(residual.data(), n);
            auto grad = data_of(me, n, 10);
            const auto res = gc::topk_allreduce(*comm, ef, grad.data(), n, o);
            // The entries each rank sent: its own top-m (all-gather), the leader's top-m (shared), all (dense).
            // m = k, or with the sampled selection the size it chose (checked against DGC's bounds); the sets
            // themselves come from the naive sort of the regenerated acc.
            auto sent_by = [&](int q) {
              std::vector<int32_t> set;
              if (res.transport == gc::Transport::Dense) {
                set.resize(n);
                std::iota(set.begin(), set.end(), 0);
                return set;
              }
              const auto acc = acc_of(res.transport == gc::Transport::Shared ? o.leader : q, n, 10);
              size_t m = res.k;
              if (how == gc::Select::Sampled) {
                std::vector<int32_t> s;
                gc::select_sampled(acc.data(), n, res.k, o.seed, s);
                m = s.size();
                EXPECT_GE(m, (res.k * 4 + 4) / 5);
              }
              return naive_topk(acc, m);
            };
            std::vector<double> ref(n, 0.0), mag(n, 0.0);
            std::vector<char> mine(n, 0);
            for (int q = 0; q < p; ++q) {
              const auto acc = acc_of(q, n, 10);
              const auto set = sent_by(q);
              for (int32_t i : set) ref[i] += as_wire(acc[i], v), mag[i] += std::fabs(acc[i]);
              if (q == me) for (int32_t i : set) mine[i] = 1;
            }
            // The terms are the values as sent, float(V(acc)). All-gather adds them in float: error at most (p-1)
            // half-ulps of the running sums, bounded by p * 2^-24 * sum |terms|. Dense and shared add in V (each
            // addition rounded once to V): p * u_V * sum |terms| with V's unit roundoff u_V.
            const int e = res.transport == gc::Transport::AllGather ? -24 : roundoff_exp(v);
            size_t bad = 0, bad_res = 0;
            const auto my_acc = acc_of(me, n, 10);
            for (size_t i = 0; i < n; ++i) {
              if (std::fabs(double(grad[i]) - ref[i]) > p * std::ldexp(mag[i], e)) ++bad;
              const float want_res = mine[i] ? my_acc[i] - as_wire(my_acc[i], v) : my_acc[i];
              if (ef.residual()[i] != want_res) ++bad_res;
            }
            EXPECT_EQ(bad, 0u) << gc::transport_name(res.transport) << " n=" << n << " d=" << d
                               << " sampled=" << int(how == gc::Select::Sampled) << " values " << int(v);
            EXPECT_EQ(bad_res, 0u) << "residual, " << gc::transport_name(res.transport) << " n=" << n << " d=" << d;
            expect_same_on_all_ranks(grad, gc::transport_name(res.transport));
          }
        }
      }
    }
  }
}

// density 1.0 through the all-gather transport equals the dense all-reduce: bitwise on 2 ranks (0 + a + b and
// a + b round alike), within the reduction-order tolerance on more
TEST(Compress, AllGatherAtFullDensityEqualsDense) {
  const int p = size_of(), me = rank_of();
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  for (size_t n : kSizes) {
    auto x = data_of(me, n, 20), dense = x;
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::vector<float> out(n);
    gc::allgather_sum(*comm, idx.data(), x.data(), n, out.data(), n);
    comm->allreduce_sum(dense.data(), n);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(out[i]) - dense[i]));
    // terms are multiples of 2^-8 below 2 in magnitude: p of them sum exactly in float, any order
    EXPECT_EQ(worst, 0.0) << "n=" << n << " P=" << p;
  }
}

TEST(Compress, DenseRingMatchesDoubleReference) {
  const int p = size_of(), me = rank_of();
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  for (size_t n : {size_t(1), size_t(3), size_t(7), size_t(1001), size_t(100003)}) {
    auto mk = [&](int r) { std::mt19937_64 h(3 + r + 100 * n); std::normal_distribution<float> w(0.f, 1.f);
                           std::vector<float> v(n); for (auto& x : v) x = w(h); return v; };
    auto x = mk(me);
    gc::dense_allreduce<float>(*comm, x.data(), n);
    std::vector<double> ref(n, 0.0), mag(n, 0.0);
    for (int q = 0; q < p; ++q) {
      auto y = mk(q);
      for (size_t i = 0; i < n; ++i) ref[i] += y[i], mag[i] += std::fabs(y[i]);
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += std::fabs(x[i] - ref[i]) > p * std::ldexp(mag[i], -24);  // as above
    EXPECT_EQ(bad, 0u) << "n=" << n;
    expect_same_on_all_ranks(x, "dense ring");
  }
}

TEST(Compress, BadDensityIsAnError) {
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  std::vector<float> g(8, 1.0f), r(8, 0.0f);
  gc::ErrorFeedback ef(r.data(), 8);
  for (double d : {0.0, -0.1, 1.5}) {
    gc::TopkOptions o;
    o.density = d;
    EXPECT_THROW(gc::topk_allreduce(*comm, ef, g.data(), 8, o), gt::Error) << d;
  }
}
