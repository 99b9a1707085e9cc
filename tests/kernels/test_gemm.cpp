// gt::gemm on each host backend (OpenBLAS, oneDNN when compiled in), fp32 and bf16/fp16 inputs with fp32 or
// 16-bit C, against a double reference: every transpose pair, odd shapes (1, 7, 33, 65, ...), leading
// dimensions larger than the row, alpha != 1, beta 0 (C poisoned with NaN: it must not be read) and beta 1.
//
// Tolerances. The inputs are generated in the storage type itself (values rounded to bf16/fp16/float), and the
// reference computes in double from exactly those values, so the comparison measures only the GEMM's own
// arithmetic: products of two 16-bit values are exact in fp32 (8+8 or 11+11 significant bits <= 24), the K-term
// sum in fp32 in any order is within gamma_K = K u / (1 - K u) (u = 2^-24) of sum |a||b| (Higham, Accuracy and
// Stability, 3.1), and a 16-bit C adds one rounding, u_h |c| (u_h = 2^-8 bf16, 2^-11 fp16). The elementwise
// bound below is that, times 4 for the roundings of the alpha scaling and the beta C addition; it holds for any summation order
// and blocking, and a wrong transpose, stride or dtype misses it by orders of magnitude. fp32 results must also
// meet the norm-wise bound of the other kernel tests (kt::tol<float>() = 2e-6).
// Separately, the bf16 and fp16 results against the reference on the fp32 inputs before rounding are within
// torch.testing's defaults for the dtype (rtol 1.6e-2 bf16, 1e-3 fp16): there input rounding dominates (each
// product up to 2 u_h relative, random signs average it down), which is what a user of the dtype sees.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "test_util.hpp"

namespace {

using gt::Op;

struct Shape {
  int M, N, K;
};
const Shape kShapes[] = {{1, 1, 1}, {1, 7, 33}, {7, 1, 65}, {33, 65, 7}, {65, 33, 1}, {7, 7, 7}, {64, 48, 130},
                         {33, 129, 257}};

template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, gt::bf16_t>) return std::ldexp(1.0, -8);
  else if constexpr (std::is_same_v<T, gt::fp16_t>) return std::ldexp(1.0, -11);
  else return std::ldexp(1.0, -24);
}

template <class T>
T store(double v) {
  return T(static_cast<float>(v));
}
template <class T>
double load(T v) {
  return static_cast<double>(static_cast<float>(v));
}

// A rows x cols matrix of random values, stored with row stride ld (> cols: the padding holds NaN, which the
// GEMM must never read), in type T; `exact` gets the stored values, `orig` the fp32 values before rounding.
template <class T>
std::vector<T> make_operand(std::mt19937_64& rng, int rows, int cols, int ld, std::vector<double>& exact,
                            std::vector<double>& orig) {
  const kt::Vec v = kt::random_vec(rng, static_cast<size_t>(rows) * cols);
  std::vector<T> m(static_cast<size_t>(rows) * ld, store<T>(std::numeric_limits<double>::quiet_NaN()));
  exact.resize(v.size());
  orig = v;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      m[static_cast<size_t>(r) * ld + c] = store<T>(v[i]);
      exact[i] = load(m[static_cast<size_t>(r) * ld + c]);
    }
  return m;
}

// op(X)[i][k] of a packed (rows x cols) matrix
double at(const std::vector<double>& x, Op op, int cols, int i, int k) {
  return op == Op::N ? x[static_cast<size_t>(i) * cols + k] : x[static_cast<size_t>(k) * cols + i];
}

template <class H, class CT>
void check_case(Op ta, Op tb, Shape s, float alpha, float beta, std::mt19937_64& rng, const std::string& what) {
  const int M = s.M, N = s.N, K = s.K;
  const int ar = ta == Op::N ? M : K, ac = ta == Op::N ? K : M;
  const int br = tb == Op::N ? K : N, bc = tb == Op::N ? N : K;
  const int lda = ac + 3, ldb = bc + 5, ldc = N + 2;
  std::vector<double> a, b, a0, b0, c_in, c_in0;
  // kt::DVec: device memory on a GPU build (cuBLAS reads only device pointers), the vector itself on a host build
  const kt::DVec<H> A = make_operand<H>(rng, ar, ac, lda, a, a0);
  const kt::DVec<H> B = make_operand<H>(rng, br, bc, ldb, b, b0);
  std::vector<CT> C0;
  if (beta == 0.f) {
    C0.assign(static_cast<size_t>(M) * ldc, store<CT>(std::numeric_limits<double>::quiet_NaN()));
    c_in.assign(static_cast<size_t>(M) * N, 0.0);
    c_in0 = c_in;
  } else {
    C0 = make_operand<CT>(rng, M, N, ldc, c_in, c_in0);
  }
  kt::DVec<CT> dC(C0);
  gt::gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, dC.data(), ldc);
  const std::vector<CT>& C = dC.host();

  const double u = unit_roundoff<float>(), uc = std::is_same_v<CT, float> ? 0.0 : unit_roundoff<CT>();
  const double gamma = K * u / (1 - K * u);
  kt::Vec got(static_cast<size_t>(M) * N), want(got.size()), want0(got.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double dot = 0, mag = 0, dot0 = 0;
      for (int k = 0; k < K; ++k) {
        dot += at(a, ta, ac, i, k) * at(b, tb, bc, k, j);
        mag += std::fabs(at(a, ta, ac, i, k) * at(b, tb, bc, k, j));
        dot0 += at(a0, ta, ac, i, k) * at(b0, tb, bc, k, j);
      }
      const size_t o = static_cast<size_t>(i) * N + j;
      want[o] = alpha * dot + beta * c_in[o];
      want0[o] = alpha * dot0 + beta * c_in0[o];
      got[o] = load(C[static_cast<size_t>(i) * ldc + j]);
      const double bound =
          4 * (gamma * std::fabs(alpha) * mag + u * std::fabs(beta * c_in[o])) + uc * std::fabs(want[o]) + 1e-30;
      ASSERT_LE(std::fabs(got[o] - want[o]), bound)
          << what << " C(" << i << "," << j << ") got " << got[o] << " want " << want[o];
    }
  // padding of C untouched (still NaN where it was poisoned, still the input where not)
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j) ASSERT_TRUE(std::isnan(load(C[static_cast<size_t>(i) * ldc + j]))) << what;
  if constexpr (std::is_same_v<H, float>) {
    EXPECT_LT(kt::rel_err(got, want), kt::tol<float>()) << what;
  } else if (K >= 7) {  // against the unrounded inputs: the dtype's rounding, torch's default rtol
    const double rtol = std::is_same_v<H, gt::bf16_t> ? 1.6e-2 : 1e-3;
    EXPECT_LT(kt::rel_err(got, want0), rtol) << what;
  }
}

template <class H, class CT>
void check_all(gt::GemmBackend backend, const char* dtypes) {
  gt::gemm_select(backend);
  std::mt19937_64 rng(42);
  for (Op ta : {Op::N, Op::T})
    for (Op tb : {Op::N, Op::T})
      for (const Shape& s : kShapes)
        for (float beta : {0.f, 1.f}) {
          const std::string what = std::string(gt::gemm_backend_name(backend)) + " " + dtypes + " " +
                                   (ta == Op::N ? "N" : "T") + (tb == Op::N ? "N" : "T") + " M=" +
                                   std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) +
                                   " beta=" + std::to_string(beta);
          check_case<H, CT>(ta, tb, s, 0.75f, beta, rng, what);
          if (::testing::Test::HasFatalFailure()) return;
        }
  gt::gemm_select(gt::GemmBackend::Auto);
}

class Gemm : public ::testing::TestWithParam<gt::GemmBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == gt::GemmBackend::OneDNN && !gt::onednn_compiled()) GTEST_SKIP() << "oneDNN not compiled in";
  }
  void TearDown() override { gt::gemm_select(gt::GemmBackend::Auto); }
};

TEST_P(Gemm, Fp32) { check_all<float, float>(GetParam(), "fp32"); }
TEST_P(Gemm, Bf16ToFp32) { check_all<gt::bf16_t, float>(GetParam(), "bf16->fp32"); }
TEST_P(Gemm, Bf16ToBf16) { check_all<gt::bf16_t, gt::bf16_t>(GetParam(), "bf16->bf16"); }
TEST_P(Gemm, Fp16ToFp32) { check_all<gt::fp16_t, float>(GetParam(), "fp16->fp32"); }
TEST_P(Gemm, Fp16ToFp16) { check_all<gt::fp16_t, gt::fp16_t>(GetParam(), "fp16->fp16"); }

TEST_P(Gemm, DescribeNamesTheBackend) {
  gt::gemm_select(GetParam());
  EXPECT_EQ(gt::gemm_backend(), GetParam());
  const std::string d = gt::gemm_describe();
  std::printf("gemm_describe: %s\n", d.c_str());
  EXPECT_EQ(d.rfind(GetParam() == gt::GemmBackend::OneDNN ? "oneDNN " : "OpenBLAS ", 0), 0u) << d;
  // every half type's path is named
  EXPECT_NE(d.find("bf16"), std::string::npos) << d;
  EXPECT_NE(d.find("fp16"), std::string::npos) << d;
}

INSTANTIATE_TEST_SUITE_P(Backends, Gemm, ::testing::Values(gt::GemmBackend::OpenBLAS, gt::GemmBackend::OneDNN),
                         [](const auto& info) { return std::string(gt::gemm_backend_name(info.param)); });

// gemm_strided_batched with operands laid out like attention's heads: batch i of A and B is the column block
// [i*w, i*w + w) of wider row-major matrices (batch stride w, row stride nb*w + 1), batch i of C a separate
// matrix after batch i-1 (batch stride M*ldc). Each batch against the double reference with the elementwise
// bound of check_case (fp32 inputs: 4 gamma_K sum|a||b|), every transpose pair; a wrong stride or a batch
// computed twice or skipped misses it by orders of magnitude.
TEST(GemmStridedBatched, HeadsInterleavedLikeAttention) {
  std::mt19937_64 rng(7);
  const int nb = 3, M = 33, N = 17, K = 9;
  const double u = unit_roundoff<float>(), gamma = K * u / (1 - K * u);
  for (Op ta : {Op::N, Op::T})
    for (Op tb : {Op::N, Op::T}) {
      const int ar = ta == Op::N ? M : K, ac = ta == Op::N ? K : M;
      const int br = tb == Op::N ? K : N, bc = tb == Op::N ? N : K;
      const int lda = nb * ac + 1, ldb = nb * bc + 1, ldc = N + 2;
      std::vector<double> a, b, a0, b0;
      const kt::DVec<float> A = make_operand<float>(rng, ar, nb * ac, lda, a, a0);
      const kt::DVec<float> B = make_operand<float>(rng, br, nb * bc, ldb, b, b0);
      kt::DVec<float> dC(static_cast<size_t>(nb) * M * ldc, std::numeric_limits<float>::quiet_NaN());
      gt::gemm_strided_batched(ta, tb, M, N, K, 0.5f, A.data(), lda, ac, B.data(), ldb, bc, 0.f, dC.data(), ldc,
                               long(M) * ldc, nb);
      const std::vector<float>& C = dC.host();
      for (int i = 0; i < nb; ++i)
        for (int r = 0; r < M; ++r)
          for (int c = 0; c < N; ++c) {
            double dot = 0, mag = 0;
            for (int k = 0; k < K; ++k) {
              // op(A_i)[r][k] in the packed (ar x nb*ac) matrix: column offset i*ac
              const double x = ta == Op::N ? a[static_cast<size_t>(r) * nb * ac + i * ac + k]
                                           : a[static_cast<size_t>(k) * nb * ac + i * ac + r];
              const double y = tb == Op::N ? b[static_cast<size_t>(k) * nb * bc + i * bc + c]
                                           : b[static_cast<size_t>(c) * nb * bc + i * bc + k];
              dot += x * y;
              mag += std::fabs(x * y);
            }
            const double got = C[static_cast<size_t>(i) * M * ldc + static_cast<size_t>(r) * ldc + c];
            ASSERT_LE(std::fabs(got - 0.5 * dot), 4 * gamma * 0.5 * mag + 1e-30)
                << (ta == Op::N ? "N" : "T") << (tb == Op::N ? "N" : "T") << " batch " << i << " C(" << r << ","
                << c << ")";
          }
      for (int i = 0; i < nb; ++i)  // C's padding never written
        for (int r = 0; r < M; ++r)
          for (int c = N; c < ldc; ++c)
            ASSERT_TRUE(std::isnan(C[static_cast<size_t>(i) * M * ldc + static_cast<size_t>(r) * ldc + c]));
    }
}

TEST(GemmSelect, AutoPrefersOnednn) {
  gt::gemm_select(gt::GemmBackend::Auto);
  EXPECT_EQ(gt::gemm_backend(), gt::onednn_compiled() ? gt::GemmBackend::OneDNN : gt::GemmBackend::OpenBLAS);
}

}  // namespace
