// Ring and shm all-reduce (and the Comm dispatch) against a reference sum computed independently: every
// rank regenerates every rank's data from a seeded generator and sums in double. Also checks that all
// ranks hold identical bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/comm/shm_allreduce.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace {

template <class T>
std::vector<T> data_of(int rank, size_t n) {
  return commtest::uniform_values<T>(1234 + 7919 * rank + n, n);
}

template <class T>
void check(const std::vector<T>& got, size_t n) {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<double> ref(n, 0.0);
  for (int r = 0; r < p; ++r) {
    auto d = data_of<T>(r, n);
    for (size_t i = 0; i < n; ++i) ref[i] += double(d[i]);
  }
  const double tol = (sizeof(T) == 4 ? 1e-6 : 1e-14) * p;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(double(got[i]) - ref[i]) > tol) ++bad;
  EXPECT_EQ(bad, 0u) << "n=" << n;
  // bitwise identical on every rank: compare with rank 0's bytes
  std::vector<T> root(got);
  MPI_Bcast(root.data(), int(n * sizeof(T)), MPI_BYTE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(0, n ? std::memcmp(root.data(), got.data(), n * sizeof(T)) : 0) << "ranks differ, n=" << n;
}

std::vector<size_t> lengths() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return {0, 1, 7, size_t(p - 1), size_t(p + 1), 1000, 100003, 1000003};
}

template <class T>
void run_algo(gt::AllreduceAlgo algo) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
  for (size_t n : lengths()) {
    auto v = data_of<T>(r, n);
    comm->allreduce_sum(v.data(), n);
    check(v, n);
  }
  EXPECT_GT(comm->stats().calls, 0);
}

TEST(Allreduce, RingFloat) { run_algo<float>(gt::AllreduceAlgo::Ring); }
TEST(Allreduce, RingDouble) { run_algo<double>(gt::AllreduceAlgo::Ring); }
TEST(Allreduce, ShmFloat) { run_algo<float>(gt::AllreduceAlgo::Shm); }
TEST(Allreduce, ShmDouble) { run_algo<double>(gt::AllreduceAlgo::Shm); }
TEST(Allreduce, LibraryFloat) { run_algo<float>(gt::AllreduceAlgo::Library); }
TEST(Allreduce, AutoPicksShmOnOneNode) {
  // every test rank runs on this machine: auto must resolve to the shared-memory path
  EXPECT_EQ(gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Auto)->allreduce_algo(), gt::AllreduceAlgo::Shm);
  run_algo<float>(gt::AllreduceAlgo::Auto);
}

TEST(Allreduce, RingFreeFunctionAndSmallShmPieces) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const size_t n = 100003;
  auto v = data_of<double>(r, n);
  gt::ring_allreduce_sum(MPI_COMM_WORLD, v.data(), n);
  check(v, n);
  gt::ShmAllreduce shm(MPI_COMM_WORLD, 4096);  // many pieces: exercises the half alternation
  auto w = data_of<float>(r, n);
  shm.sum(w.data(), n);
  check(w, n);
}

// Zero-copy shm all-reduce on buffers inside a registered region (every rank at the same offset), through
// the Comm (blocking and non-blocking), and the fall-back to the copying path when the offsets differ or a
// rank's buffer is outside the region. Sums checked against the double reference and for identical bits.
TEST(Allreduce, ShmRegisteredRegion) {
  int r = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Shm);
  const size_t cap = 1200000;
  float* region = static_cast<float*>(comm->alloc_registered(cap * sizeof(float)));
  ASSERT_NE(region, nullptr);
  for (size_t i = 0; i < cap; ++i) ASSERT_EQ(region[i], 0.0f) << "region not zero-filled at " << i;
  EXPECT_EQ(comm->alloc_registered(64), nullptr) << "a second region must be refused";
  auto run = [&](size_t offset, size_t n, bool nonblocking) {
    auto d = data_of<float>(r, n);
    std::copy(d.begin(), d.end(), region + offset);
    if (nonblocking) comm->iallreduce_sum(region + offset, n)->wait();
    else comm->allreduce_sum(region + offset, n);
    check(std::vector<float>(region + offset, region + offset + n), n);
  };
  for (size_t n : {size_t(1), size_t(p + 1), size_t(1000), size_t(100003), size_t(1000003)}) run(0, n, false);
  run(77, 100003, true);   // unaligned offset, non-blocking
  run(cap - 4099, 4099, false);  // ends at the region's end
  // offsets that differ between ranks: the copying path, still the right sum
  {
    const size_t n = 50001, off = r == 0 ? 0 : 64;
    auto d = data_of<float>(r, n);
    std::copy(d.begin(), d.end(), region + off);
    comm->allreduce_sum(region + off, n);
    check(std::vector<float>(region + off, region + off + n), n);
  }
  // rank 0's buffer outside the region
  {
    const size_t n = 30011;
    std::vector<float> own = data_of<float>(r, n);
    float* buf = r == 0 ? own.data() : region + 5;
    if (r != 0) std::copy(own.begin(), own.end(), buf);
    comm->allreduce_sum(buf, n);
    check(std::vector<float>(buf, buf + n), n);
  }
}

// Several non-blocking ring all-reduces in flight at once, advanced only by test() polling.
TEST(Allreduce, IallreduceRingPolling) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  for (auto algo : {gt::AllreduceAlgo::Ring, gt::AllreduceAlgo::Shm, gt::AllreduceAlgo::Library}) {
    auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
    std::vector<size_t> ns = {5, 300001, 17, 70000};
    std::vector<std::vector<float>> bufs;
    for (size_t n : ns) bufs.push_back(data_of<float>(r, n));
    std::vector<gt::RequestPtr> reqs;
    for (size_t i = 0; i < ns.size(); ++i) reqs.push_back(comm->iallreduce_sum(bufs[i].data(), ns[i]));
    bool all = false;
    while (!all) {
      all = true;
      for (auto& q : reqs) all = q->test() && all;
    }
    for (size_t i = 0; i < ns.size(); ++i) check(bufs[i], ns[i]);
    EXPECT_GT(comm->stats().blocked_seconds, 0.0);
  }
}

}  // namespace
