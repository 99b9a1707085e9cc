// The host-staged backend (src/comm/comm_staged.hpp) on the CPU build, with the host staging (memcpy): every
// operation gives the same bits as the plain MPI communicator it wraps, on the same data with the same algorithm
// (the staged one adds only copies), for every algorithm; and the wrapped communicator never sees a caller's
// buffer, only staging copies (a spy between the two checks every pointer). A GPU build's CUDA copies are the
// same logic with another HostStaging; the trainer's layout tests run it there (label gpu1).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <random>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/comm/comm_staged.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace {

using commtest::world_rank;
using commtest::world_size;

std::vector<float> data_of(int rank, size_t n, int salt) {
  return commtest::uniform_values<float>(777 + 7919 * rank + 31 * n + salt, n);
}

// The caller's buffers, registered so the spy can tell them from staging copies.
struct Fence {
  std::vector<std::pair<const void*, size_t>> ranges;
  void add(const std::vector<float>& v) { ranges.push_back({v.data(), v.size() * sizeof(float)}); }
  bool inside(const void* p) const {
    for (auto& [b, n] : ranges)
      if (p >= b && p < static_cast<const char*>(b) + (n ? n : 1)) return true;
    return false;
  }
};

// Forwards to a real MPI communicator and fails the test if handed a caller's buffer.
class Spy : public gt::Comm {
 public:
  Spy(std::unique_ptr<gt::Comm> c, const Fence& f) : c_(std::move(c)), f_(f) {}
  int rank() const override { return c_->rank(); }
  int size() const override { return c_->size(); }
  std::string backend() const override { return "spy"; }
  void allreduce(void* b, size_t n, gt::DType t, gt::ReduceOp op) override { see(b); c_->allreduce(b, n, t, op); }
  gt::RequestPtr iallreduce(void* b, size_t n, gt::DType t, gt::ReduceOp op) override {
    see(b);
    return c_->iallreduce(b, n, t, op);
  }
  void reduce_scatter(const void* s, void* r, size_t n, gt::DType t, gt::ReduceOp op) override {
    see(s), see(r);
    c_->reduce_scatter(s, r, n, t, op);
  }
  void allgather(const void* s, void* r, size_t n, gt::DType t) override { see(s), see(r), c_->allgather(s, r, n, t); }
  gt::RequestPtr ireduce_scatter(const void* s, void* r, size_t n, gt::DType t, gt::ReduceOp op) override {
    see(s), see(r);
    return c_->ireduce_scatter(s, r, n, t, op);
  }
  gt::RequestPtr iallgather(const void* s, void* r, size_t n, gt::DType t) override {
    see(s), see(r);
    return c_->iallgather(s, r, n, t);
  }
  gt::RequestPtr ireduce_scatter_v(const void* s, void* r, const std::vector<size_t>& c, gt::DType t,
                                   gt::ReduceOp op) override {
    see(s), see(r);
    return c_->ireduce_scatter_v(s, r, c, t, op);
  }
  gt::RequestPtr iallgather_v(const void* s, void* r, const std::vector<size_t>& c, gt::DType t) override {
    see(s), see(r);
    return c_->iallgather_v(s, r, c, t);
  }
  void broadcast(void* b, size_t n, gt::DType t, int root) override { see(b), c_->broadcast(b, n, t, root); }
  void send(const void* b, size_t n, gt::DType t, int p, int tag) override { see(b), c_->send(b, n, t, p, tag); }
  void recv(void* b, size_t n, gt::DType t, int p, int tag) override { see(b), c_->recv(b, n, t, p, tag); }
  gt::RequestPtr isend(const void* b, size_t n, gt::DType t, int p, int tag) override {
    see(b);
    return c_->isend(b, n, t, p, tag);
  }
  gt::RequestPtr irecv(void* b, size_t n, gt::DType t, int p, int tag) override {
    see(b);
    return c_->irecv(b, n, t, p, tag);
  }
  void barrier() override { c_->barrier(); }
  void set_allreduce_algo(gt::AllreduceAlgo a) override { c_->set_allreduce_algo(a); }
  gt::AllreduceAlgo allreduce_algo() const override { return c_->allreduce_algo(); }
  int seen = 0;

 private:
  void see(const void* p) {
    ++seen;
    EXPECT_FALSE(f_.inside(p)) << "the wrapped communicator was handed a caller's buffer";
  }
  std::unique_ptr<gt::Comm> c_;
  const Fence& f_;
};

struct Pair {
  Fence fence;
  Spy* spy = nullptr;
  std::unique_ptr<gt::Comm> staged, plain;
  explicit Pair(gt::AllreduceAlgo algo) {
    auto s = std::make_unique<Spy>(gt::make_mpi_comm(MPI_COMM_WORLD, algo), fence);
    spy = s.get();
    staged = gt::make_staged_comm(std::move(s), gt::make_host_staging());
    plain = gt::make_mpi_comm(MPI_COMM_WORLD, algo);
  }
};

const gt::AllreduceAlgo kAlgos[] = {gt::AllreduceAlgo::Library, gt::AllreduceAlgo::Ring, gt::AllreduceAlgo::Shm};
const size_t kSizes[] = {1, 7, 1001};

void same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what, size_t n) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what << " n=" << n;
}

TEST(Staged, AllreduceEqualsPlainMpi) {
  for (auto algo : kAlgos)
    for (size_t n : kSizes) {
      Pair c(algo);
      auto a = data_of(world_rank(), n, 1), b = a, x = data_of(world_rank(), n, 2), y = x;
      c.fence.add(a), c.fence.add(x);
      c.staged->allreduce(a.data(), n, gt::DType::F32, gt::ReduceOp::Sum);
      c.plain->allreduce(b.data(), n, gt::DType::F32, gt::ReduceOp::Sum);
      same_bits(a, b, "allreduce", n);
      auto r = c.staged->iallreduce(x.data(), n, gt::DType::F32, gt::ReduceOp::Max);
      c.plain->allreduce(y.data(), n, gt::DType::F32, gt::ReduceOp::Max);
      r->wait();
      same_bits(x, y, "iallreduce max", n);
      EXPECT_GT(c.spy->seen, 0);
    }
}

// Several non-blocking operations in flight at once each get their own staging buffer, whatever the wait order.
TEST(Staged, RequestsInFlightKeepTheirOwnBuffers) {
  Pair c(gt::AllreduceAlgo::Library);
  std::vector<std::vector<float>> v, ref;
  for (int k = 0; k < 4; ++k) {
    v.push_back(data_of(world_rank(), 513 + k, 10 + k));
    ref.push_back(v.back());
  }
  for (auto& x : v) c.fence.add(x);
  std::vector<gt::RequestPtr> reqs;
  for (auto& x : v) reqs.push_back(c.staged->iallreduce(x.data(), x.size(), gt::DType::F32, gt::ReduceOp::Sum));
  for (auto& x : ref) c.plain->allreduce(x.data(), x.size(), gt::DType::F32, gt::ReduceOp::Sum);
  for (int k = 3; k >= 0; --k) reqs[size_t(k)]->wait();
  for (int k = 0; k < 4; ++k) same_bits(v[size_t(k)], ref[size_t(k)], "in flight", v[size_t(k)].size());
}

TEST(Staged, ReduceScatterAndAllgather) {
  const int p = world_size(), me = world_rank();
  for (auto algo : kAlgos)
    for (size_t n : kSizes) {
      Pair c(algo);
      auto send = data_of(me, n * p, 3);
      std::vector<float> r1(n), r2(n), g1(n * p, -9), g2(n * p, -9), g3(n * p, -9);
      c.fence.add(send), c.fence.add(r1), c.fence.add(g1), c.fence.add(g3);
      c.staged->ireduce_scatter(send.data(), r1.data(), n, gt::DType::F32, gt::ReduceOp::Sum)->wait();
      c.plain->reduce_scatter(send.data(), r2.data(), n, gt::DType::F32, gt::ReduceOp::Sum);
      same_bits(r1, r2, "reduce_scatter", n);
      c.staged->allgather(r1.data(), g1.data(), n, gt::DType::F32);
      c.plain->allgather(r2.data(), g2.data(), n, gt::DType::F32);
      same_bits(g1, g2, "allgather", n);
      std::copy(r1.begin(), r1.end(), g3.begin() + long(n) * me);  // in place: send is recv's own block
      c.staged->iallgather(g3.data() + n * me, g3.data(), n, gt::DType::F32)->wait();
      same_bits(g3, g2, "allgather in place", n);
    }
}

// Uneven blocks, one of them empty (ZeRO's units meet the shards in pieces of any length).
TEST(Staged, UnevenReduceScatterAndAllgather) {
  const int p = world_size(), me = world_rank();
  std::vector<size_t> counts;
  for (int r = 0; r < p; ++r) counts.push_back(r == 1 ? 0 : size_t(3 + 5 * r));
  size_t total = 0, off = 0;
  for (int r = 0; r < p; ++r) total += counts[size_t(r)];
  for (int r = 0; r < me; ++r) off += counts[size_t(r)];
  Pair c(gt::AllreduceAlgo::Library);
  auto send = data_of(me, total, 4);
  std::vector<float> r1(counts[size_t(me)]), r2(counts[size_t(me)]);
  c.fence.add(send), c.fence.add(r1);
  c.staged->ireduce_scatter_v(send.data(), r1.data(), counts, gt::DType::F32, gt::ReduceOp::Sum)->wait();
  c.plain->ireduce_scatter_v(send.data(), r2.data(), counts, gt::DType::F32, gt::ReduceOp::Sum)->wait();
  same_bits(r1, r2, "reduce_scatter_v", total);
  std::vector<float> g1(total, -9), g2(total, -9), g3(total, -9);
  c.fence.add(g1), c.fence.add(g3);
  c.staged->iallgather_v(r1.data(), g1.data(), counts, gt::DType::F32)->wait();
  c.plain->iallgather_v(r2.data(), g2.data(), counts, gt::DType::F32)->wait();
  same_bits(g1, g2, "allgather_v", total);
  std::copy(r1.begin(), r1.end(), g3.begin() + long(off));
  c.staged->iallgather_v(g3.data() + off, g3.data(), counts, gt::DType::F32)->wait();
  same_bits(g3, g2, "allgather_v in place", total);
}

TEST(Staged, BroadcastAndPointToPoint) {
  const int p = world_size(), me = world_rank();
  Pair c(gt::AllreduceAlgo::Library);
  auto b = data_of(me, 257, 5), ref = data_of(1 % p, 257, 5);
  c.fence.add(b);
  c.staged->broadcast(b.data(), b.size(), gt::DType::F32, 1 % p);
  same_bits(b, ref, "broadcast", b.size());
  // a ring: send to the next rank, receive from the previous, blocking and grouped
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  auto out = data_of(me, 99, 6), in = std::vector<float>(99, -1), in2 = in;
  c.fence.add(out), c.fence.add(in), c.fence.add(in2);
  auto r = c.staged->isend(out.data(), out.size(), gt::DType::F32, next, 3);
  c.staged->recv(in.data(), in.size(), gt::DType::F32, prev, 3);
  r->wait();
  same_bits(in, data_of(prev, 99, 6), "isend/recv", 99);
  std::vector<gt::P2POp> msgs = {{true, out.data(), out.size(), gt::DType::F32, next, 4},
                                 {false, in2.data(), in2.size(), gt::DType::F32, prev, 4}};
  for (auto& q : c.staged->exchange(msgs)) q->wait();
  same_bits(in2, data_of(prev, 99, 6), "exchange", 99);
}

}  // namespace
