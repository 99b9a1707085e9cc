// The 16-bit float sum (DType::BF16 / F16, src/comm/half_sum.hpp) on 2-4 ranks, odd lengths, every algorithm
// setting (ring and shm fall back to the library for 16-bit types), blocking and not:
//  - against the exact sum (double) of every rank's 16-bit inputs, regenerated independently on each rank, with
//    the bound of P - 1 roundings: |got - ref| <= (P - 1) * u * sum_r |x_r| (+ (P - 1) * 2^-25 for fp16, whose
//    partial sums may fall in the subnormal range, where a rounding is absolute, at most half of 2^-24);
//    u = 2^-8 for bf16, 2^-11 for fp16 (round to nearest even);
//  - at P = 2 the one addition is exact in float, so the result is bit for bit the float sum rounded once;
//  - all ranks hold the same bits; a max of 16-bit floats is refused.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/half.hpp"
#include "src/comm/comm.hpp"
#include "src/core/error.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace {

template <class H>
std::vector<H> data_of(int rank, size_t n) {
  return commtest::uniform_values<H>(99 + 7919 * rank + n, n, -4, 4);
}

template <class H>
void check(const std::vector<H>& got, size_t n, double u, double abs_per_rounding) {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<double> ref(n, 0.0), mag(n, 0.0);
  for (int r = 0; r < p; ++r) {
    auto d = data_of<H>(r, n);
    for (size_t i = 0; i < n; ++i) ref[i] += double(float(d[i])), mag[i] += std::fabs(double(float(d[i])));
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double tol = (p - 1) * (u * mag[i] + abs_per_rounding);
    if (!(std::fabs(double(float(got[i])) - ref[i]) <= tol)) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "n=" << n;
  if (p == 2) {  // one addition: the float sum rounded once
    auto a = data_of<H>(0, n), b = data_of<H>(1, n);
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) off += H(float(a[i]) + float(b[i])).bits != got[i].bits;
    EXPECT_EQ(off, 0u) << "n=" << n << ": not the float sum rounded once";
  }
  std::vector<H> root(got);
  MPI_Bcast(root.data(), int(n * sizeof(H)), MPI_BYTE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(0, n ? std::memcmp(root.data(), got.data(), n * sizeof(H)) : 0) << "ranks differ, n=" << n;
}

template <class H>
void run_all(gt::DType t, double u, double abs_per_rounding) {
  int r = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (auto algo : {gt::AllreduceAlgo::Library, gt::AllreduceAlgo::Ring, gt::AllreduceAlgo::Shm,
                    gt::AllreduceAlgo::Auto}) {
    auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
    for (size_t n : {size_t(1), size_t(7), size_t(p + 1), size_t(1001), size_t(65537)}) {
      auto v = data_of<H>(r, n);
      comm->allreduce(v.data(), n, t, gt::ReduceOp::Sum);
      check(v, n, u, abs_per_rounding);
      auto w = data_of<H>(r, n);
      comm->iallreduce(w.data(), n, t, gt::ReduceOp::Sum)->wait();
      EXPECT_EQ(0, std::memcmp(v.data(), w.data(), n * sizeof(H))) << "iallreduce differs, n=" << n;
    }
    EXPECT_DOUBLE_EQ(comm->stats().bytes, 2.0 * 2 * (1 + 7 + (p + 1) + 1001 + 65537)) << "2 bytes per element";
  }
}

}  // namespace

TEST(HalfAllreduce, Bf16SumWithinRoundingBound) { run_all<gt::bf16_t>(gt::DType::BF16, std::ldexp(1.0, -8), 0.0); }

TEST(HalfAllreduce, Fp16SumWithinRoundingBound) {
  run_all<gt::fp16_t>(gt::DType::F16, std::ldexp(1.0, -11), std::ldexp(1.0, -25));
}

TEST(HalfAllreduce, MaxIsRefused) {
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  gt::bf16_t x(1.0f);
  EXPECT_THROW(comm->allreduce(&x, 1, gt::DType::BF16, gt::ReduceOp::Max), gt::Error);
}
