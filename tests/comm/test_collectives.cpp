// Reduce-scatter and all-gather (blocking, non-blocking, uneven, in place) of every all-reduce algorithm's
// communicator against references computed independently: every rank regenerates every rank's data from a
// seeded generator and sums in double. Odd lengths (1, 7, 1001, p + 1) so no block size is a nice number.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <vector>

#include "src/comm/comm.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace {

using commtest::world_rank;
using commtest::world_size;

std::vector<float> data_of(int rank, size_t n) { return commtest::uniform_values<float>(4321 + 104729 * rank + n, n); }

// Sum over ranks of element [first, first + n) of every rank's data_of(r, total), in double.
std::vector<double> reference(size_t total, size_t first, size_t n) {
  std::vector<double> ref(n, 0.0);
  for (int r = 0; r < world_size(); ++r) {
    auto d = data_of(r, total);
    for (size_t i = 0; i < n; ++i) ref[i] += double(d[first + i]);
  }
  return ref;
}

// A sum of p floats in [-1, 1], each rounded once per addition: |error| <= p * 2^-24 * p (generous: no order
// is promised, so no tighter bound than the worst case of p additions of magnitude <= p).
void expect_sums(const std::vector<float>& got, const std::vector<double>& ref, const char* what) {
  const int p = world_size();
  const double tol = 6e-8 * p * p;
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::fabs(double(got[i]) - ref[i]) > tol) ++bad;
  EXPECT_EQ(bad, 0u) << what << " n=" << ref.size();
}

const gt::AllreduceAlgo kAlgos[] = {gt::AllreduceAlgo::Library, gt::AllreduceAlgo::Ring, gt::AllreduceAlgo::Shm};
const size_t kBlocks[] = {1, 7, 1001};

TEST(Collectives, ReduceScatterBlockingAndNot) {
  const int p = world_size(), me = world_rank();
  for (auto algo : kAlgos) {
    auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
    for (size_t b : kBlocks) {
      const size_t total = b * p;
      auto send = data_of(me, total);
      std::vector<float> a(b), c(b);
      comm->reduce_scatter(send.data(), a.data(), b, gt::DType::F32, gt::ReduceOp::Sum);
      comm->ireduce_scatter(send.data(), c.data(), b, gt::DType::F32, gt::ReduceOp::Sum)->wait();
      const auto ref = reference(total, me * b, b);
      expect_sums(a, ref, "reduce_scatter");
      expect_sums(c, ref, "ireduce_scatter");
    }
  }
}

TEST(Collectives, ReduceScatterUneven) {
  const int p = world_size(), me = world_rank();
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  // counts r, 2r + 1, ... with an empty block on rank 0 (a bucket that misses a shard)
  for (size_t scale : {size_t(1), size_t(13)}) {
    std::vector<size_t> counts(p);
    size_t total = 0, first = 0;
    for (int r = 0; r < p; ++r) {
      counts[r] = scale * size_t(r) * (r % 2 ? 2 : 1);
      if (r < me) first += counts[r];
      total += counts[r];
    }
    auto send = data_of(me, total);
    std::vector<float> got(counts[me] + 1, 0.0f);
    comm->ireduce_scatter_v(send.data(), got.data(), counts, gt::DType::F32, gt::ReduceOp::Sum)->wait();
    got.resize(counts[me]);
    expect_sums(got, reference(total, first, counts[me]), "ireduce_scatter_v");
  }
  std::vector<size_t> wrong(p + 1, 1);
  std::vector<float> buf(p + 1);
  EXPECT_THROW(comm->ireduce_scatter_v(buf.data(), buf.data(), wrong, gt::DType::F32, gt::ReduceOp::Sum),
               std::exception);
}

TEST(Collectives, AllgatherCopiesAndInPlace) {
  const int p = world_size(), me = world_rank();
  for (auto algo : kAlgos) {
    auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
    for (size_t b : kBlocks) {
      auto mine = data_of(me, b);
      std::vector<float> a(b * p), c(b * p, -7.0f), d(b * p, -7.0f);
      comm->allgather(mine.data(), a.data(), b, gt::DType::F32);
      comm->iallgather(mine.data(), c.data(), b, gt::DType::F32)->wait();
      // in place: this rank's block already sits in the output
      std::copy(mine.begin(), mine.end(), d.begin() + me * b);
      comm->iallgather(d.data() + me * b, d.data(), b, gt::DType::F32)->wait();
      std::vector<float> ref;
      for (int r = 0; r < p; ++r) {
        auto x = data_of(r, b);
        ref.insert(ref.end(), x.begin(), x.end());
      }
      EXPECT_EQ(a, ref) << "allgather b=" << b;  // a gather moves bits: exact
      EXPECT_EQ(c, ref) << "iallgather b=" << b;
      EXPECT_EQ(d, ref) << "in-place iallgather b=" << b;
    }
  }
}

}  // namespace
