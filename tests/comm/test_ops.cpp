// Every other Comm op against references built from each rank's seeded data; stats must count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "src/comm/comm.hpp"
#include "src/core/error.hpp"

namespace {

int64_t val(int rank, size_t i) { return int64_t(rank) * 1000003 + int64_t(i) * 7 + 1; }

TEST(CommOps, ReduceScatterAllgatherBroadcast) {
  auto c = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Ring);
  const int p = c->size(), r = c->rank();
  const size_t blk = 5;
  std::vector<int64_t> send(p * blk), recv(blk);
  for (size_t i = 0; i < send.size(); ++i) send[i] = val(r, i);
  c->reduce_scatter(send.data(), recv.data(), blk, gt::DType::I64, gt::ReduceOp::Sum);
  for (size_t i = 0; i < blk; ++i) {
    int64_t ref = 0;
    for (int q = 0; q < p; ++q) ref += val(q, r * blk + i);
    EXPECT_EQ(recv[i], ref);
  }
  std::vector<double> mine(blk), all(p * blk);
  for (size_t i = 0; i < blk; ++i) mine[i] = double(val(r, i));
  c->allgather(mine.data(), all.data(), blk, gt::DType::F64);
  for (int q = 0; q < p; ++q)
    for (size_t i = 0; i < blk; ++i) EXPECT_EQ(all[q * blk + i], double(val(q, i)));
  const int root = p - 1;
  std::vector<int32_t> b(9);
  for (size_t i = 0; i < b.size(); ++i) b[i] = int32_t(r == root ? val(root, i) : -1);
  c->broadcast(b.data(), b.size(), gt::DType::I32, root);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], int32_t(val(root, i)));
  EXPECT_EQ(c->stats().calls, 3);
  EXPECT_GT(c->stats().bytes, 0);
}

TEST(CommOps, SendRecvAndNonBlocking) {
  auto c = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  const int p = c->size(), r = c->rank();
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  std::vector<float> out(11), in(11, -1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(val(r, i) % 4096);
  auto rq = c->irecv(in.data(), in.size(), gt::DType::F32, left, 3);
  auto sq = c->isend(out.data(), out.size(), gt::DType::F32, right, 3);
  while (!rq->test()) {
  }
  sq->wait();
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(in[i], float(val(left, i) % 4096));
  // blocking: even ranks send first (odd count: the last even rank pairs with nobody)
  if (p % 2 == 0) {
    std::vector<uint8_t> m(6, uint8_t(r)), got(6, 255);
    const int peer = r ^ 1;
    if (r % 2 == 0) {
      c->send(m.data(), m.size(), gt::DType::U8, peer, 4);
      c->recv(got.data(), got.size(), gt::DType::U8, peer, 4);
    } else {
      c->recv(got.data(), got.size(), gt::DType::U8, peer, 4);
      c->send(m.data(), m.size(), gt::DType::U8, peer, 4);
    }
    for (auto g : got) EXPECT_EQ(g, uint8_t(peer));
  }
  EXPECT_GT(c->stats().calls, 0);
  EXPECT_THROW(c->send(out.data(), 1, gt::DType::F32, p, 0), gt::Error);
}

}  // namespace
