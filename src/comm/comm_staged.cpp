#include "src/comm/comm_staged.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "src/core/error.hpp"

namespace gt {

namespace {

// Staging buffers are kept and reused: pinned allocations cost milliseconds, and a step issues hundreds of
// operations of a few recurring sizes. A buffer is lent to one operation at a time (several non-blocking ones can
// be in flight) and comes back when that operation completes.
class StagingPool {
 public:
  explicit StagingPool(std::shared_ptr<HostStaging> s) : staging_(std::move(s)) {}
  ~StagingPool() {
    for (Slot& b : slots_)
      if (!b.lent) staging_->free_host(b.ptr);  // a lent one may still be in MPI's hands (an unwinding error)
  }
  unsigned char* acquire(size_t bytes) {
    Slot* best = nullptr;
    for (Slot& b : slots_)
      if (!b.lent && b.bytes >= bytes && (!best || b.bytes < best->bytes)) best = &b;
    if (!best) {
      size_t n = size_t(1) << 16;  // powers of two from 64 KiB: few distinct sizes, reused across steps
      while (n < bytes) n <<= 1;
      slots_.push_back({static_cast<unsigned char*>(staging_->alloc_host(n)), n, false});
      best = &slots_.back();
    }
    best->lent = true;
    return best->ptr;
  }
  void release(const unsigned char* p) {
    for (Slot& b : slots_)
      if (b.ptr == p) b.lent = false;
  }
  HostStaging& staging() { return *staging_; }

 private:
  struct Slot {
    unsigned char* ptr;
    size_t bytes;
    bool lent;
  };
  std::shared_ptr<HostStaging> staging_;
  std::vector<Slot> slots_;  // few: one per size class in use at once
};

// Host buffers lent for one operation, returned when it completes (or the scope ends).
class Lease {
 public:
  explicit Lease(StagingPool& pool) : pool_(&pool) {}
  Lease(Lease&& o) noexcept : pool_(o.pool_), bufs_(std::move(o.bufs_)) { o.bufs_.clear(); }
  Lease(const Lease&) = delete;
  ~Lease() {
    if (!unwinding()) release();  // while unwinding MPI may still write into them: leak (comm.hpp)
  }
  unsigned char* take(size_t bytes) {
    bufs_.push_back(pool_->acquire(bytes));
    return bufs_.back();
  }
  // A host copy of `bytes` of device memory at `device`.
  unsigned char* staged(const void* device, size_t bytes) {
    unsigned char* h = take(bytes);
    if (bytes) pool_->staging().to_host(h, device, bytes);
    return h;
  }
  void release() {
    for (unsigned char* b : bufs_) pool_->release(b);
    bufs_.clear();
  }

 private:
  StagingPool* pool_;
  std::vector<unsigned char*> bufs_;
};

class StagedRequest : public Request {
 public:
  StagedRequest(RequestPtr inner, Lease lease, std::function<void()> finish, CommStats& stats)
      : inner_(std::move(inner)), lease_(std::move(lease)), finish_(std::move(finish)), stats_(stats) {}
  ~StagedRequest() override {
    if (!done_ && !unwinding()) wait();  // as MPI requests do: the copy back must not be lost
  }
  bool test() override {
    if (done_) return true;
    const double t0 = MPI_Wtime();
    const bool ready = inner_->test();
    if (ready) complete();
    stats_.blocked_seconds += MPI_Wtime() - t0;
    return ready;
  }
  void wait() override {
    if (done_) return;
    const double t0 = MPI_Wtime();
    inner_->wait();
    complete();
    stats_.blocked_seconds += MPI_Wtime() - t0;
  }

 private:
  void complete() {
    if (finish_) finish_();
    lease_.release();
    done_ = true;
  }
  RequestPtr inner_;
  Lease lease_;
  std::function<void()> finish_;  // the copy of the result back to the device
  CommStats& stats_;
  bool done_ = false;
};

class StagedComm : public Comm {
 public:
  StagedComm(std::unique_ptr<Comm> host, std::shared_ptr<HostStaging> s) : host_(std::move(host)), pool_(std::move(s)) {}
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override { return "mpi-staged"; }

  void allreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    Blocking b(stats_, n * dtype_size(t));
    Lease l(pool_);
    unsigned char* h = l.staged(buf, n * dtype_size(t));
    host_->allreduce(h, n, t, op);
    to_device(buf, h, n * dtype_size(t));
  }
  RequestPtr iallreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    const size_t bytes = n * dtype_size(t);
    count(bytes);
    Lease l(pool_);
    unsigned char* h = l.staged(buf, bytes);
    RequestPtr r = host_->iallreduce(h, n, t, op);
    return request(std::move(r), std::move(l), [=] { to_device(buf, h, bytes); });
  }
  void reduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    blocking([&] { return ireduce_scatter(send, recv, rc, t, op); });
  }
  void allgather(const void* send, void* recv, size_t sc, DType t) override {
    blocking([&] { return iallgather(send, recv, sc, t); });
  }
  RequestPtr ireduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    const size_t block = rc * dtype_size(t);
    count(block * size_t(size()));
    Lease l(pool_);
    unsigned char* hs = l.staged(send, block * size_t(size()));
    unsigned char* hr = l.take(block);
    RequestPtr r = host_->ireduce_scatter(hs, hr, rc, t, op);
    return request(std::move(r), std::move(l), [=] { to_device(recv, hr, block); });
  }
  // In place or not, the host side runs in place: this rank's block is copied into its slot of the host result.
  RequestPtr iallgather(const void* send, void* recv, size_t sc, DType t) override {
    const size_t block = sc * dtype_size(t), total = block * size_t(size());
    count(total);
    Lease l(pool_);
    unsigned char* hr = l.take(total);
    unsigned char* mine = hr + block * size_t(rank());
    if (block) pool_.staging().to_host(mine, send, block);
    RequestPtr r = host_->iallgather(mine, hr, sc, t);
    return request(std::move(r), std::move(l), [=] { to_device(recv, hr, total); });
  }
  RequestPtr ireduce_scatter_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t,
                               ReduceOp op) override {
    if (int(counts.size()) != size()) throw Error("comm: reduce_scatter_v got a count per rank of another group");
    const size_t es = dtype_size(t), total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    const size_t mine = counts[size_t(rank())] * es;
    count(total * es);
    Lease l(pool_);
    unsigned char* hs = l.staged(send, total * es);
    unsigned char* hr = l.take(mine);
    RequestPtr r = host_->ireduce_scatter_v(hs, hr, counts, t, op);
    return request(std::move(r), std::move(l), [=] { to_device(recv, hr, mine); });
  }
  RequestPtr iallgather_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t) override {
    if (int(counts.size()) != size()) throw Error("comm: allgather_v got a count per rank of another group");
    const size_t es = dtype_size(t), total = std::accumulate(counts.begin(), counts.end(), size_t(0)) * es;
    const size_t off = std::accumulate(counts.begin(), counts.begin() + rank(), size_t(0)) * es;
    count(total);
    Lease l(pool_);
    unsigned char* hr = l.take(total);
    if (counts[size_t(rank())]) pool_.staging().to_host(hr + off, send, counts[size_t(rank())] * es);
    RequestPtr r = host_->iallgather_v(hr + off, hr, counts, t);
    return request(std::move(r), std::move(l), [=] { to_device(recv, hr, total); });
  }
  void broadcast(void* buf, size_t n, DType t, int root) override {
    const size_t bytes = n * dtype_size(t);
    Blocking b(stats_, bytes);
    Lease l(pool_);
    unsigned char* h = rank() == root ? l.staged(buf, bytes) : l.take(bytes);
    host_->broadcast(h, n, t, root);
    if (rank() != root) to_device(buf, h, bytes);
  }
  void send(const void* buf, size_t n, DType t, int peer, int tag) override {
    blocking([&] { return isend(buf, n, t, peer, tag); });
  }
  void recv(void* buf, size_t n, DType t, int peer, int tag) override {
    blocking([&] { return irecv(buf, n, t, peer, tag); });
  }
  RequestPtr isend(const void* buf, size_t n, DType t, int peer, int tag) override {
    count(n * dtype_size(t));
    Lease l(pool_);
    unsigned char* h = l.staged(buf, n * dtype_size(t));
    RequestPtr r = host_->isend(h, n, t, peer, tag);
    return request(std::move(r), std::move(l), nullptr);
  }
  RequestPtr irecv(void* buf, size_t n, DType t, int peer, int tag) override {
    const size_t bytes = n * dtype_size(t);
    count(bytes);
    Lease l(pool_);
    unsigned char* h = l.take(bytes);
    RequestPtr r = host_->irecv(h, n, t, peer, tag);
    return request(std::move(r), std::move(l), [=] { to_device(buf, h, bytes); });
  }
  void barrier() override {
    Blocking b(stats_, 0);
    host_->barrier();
  }
  const watchdog::Group* watch_group() const override { return host_->watch_group(); }
  void set_allreduce_algo(AllreduceAlgo a) override { host_->set_allreduce_algo(a); }
  AllreduceAlgo allreduce_algo() const override { return host_->allreduce_algo(); }

 private:
  // Counts one operation; a blocking one also adds its whole duration (copies included) to blocked_seconds.
  struct Blocking {
    Blocking(CommStats& s, size_t bytes) : s_(s), t0_(MPI_Wtime()) {
      s_.bytes += double(bytes);
      s_.calls += 1;
    }
    ~Blocking() { s_.blocked_seconds += MPI_Wtime() - t0_; }
    CommStats& s_;
    double t0_;
  };
  // A blocking operation as its non-blocking form and a wait: blocked for the whole of it, staging copies included.
  template <class Start>
  void blocking(Start start) {
    const double t0 = MPI_Wtime();
    RequestPtr r = start();
    const double before = stats_.blocked_seconds;
    r->wait();
    stats_.blocked_seconds = before + (MPI_Wtime() - t0);
  }
  void count(size_t bytes) {
    stats_.bytes += double(bytes);
    stats_.calls += 1;
  }
  void to_device(void* device, const void* host, size_t bytes) {
    if (bytes) pool_.staging().to_device(device, host, bytes);
  }
  RequestPtr request(RequestPtr inner, Lease lease, std::function<void()> finish) {
    return std::make_unique<StagedRequest>(std::move(inner), std::move(lease), std::move(finish), stats_);
  }

  std::unique_ptr<Comm> host_;
  StagingPool pool_;
};

class MemcpyStaging : public HostStaging {
 public:
  void* alloc_host(size_t bytes) override {
    void* p = std::malloc(bytes);
    if (!p) throw Error("comm: cannot allocate a staging buffer of " + std::to_string(bytes) + " bytes");
    return p;
  }
  void free_host(void* p) override { std::free(p); }
  void to_host(void* host, const void* device, size_t bytes) override { std::memcpy(host, device, bytes); }
  void to_device(void* device, const void* host, size_t bytes) override { std::memcpy(device, host, bytes); }
  const char* name() const override { return "host memcpy"; }
};

}  // namespace

std::shared_ptr<HostStaging> make_host_staging() { return std::make_shared<MemcpyStaging>(); }

std::unique_ptr<Comm> make_staged_comm(std::unique_ptr<Comm> host, std::shared_ptr<HostStaging> staging) {
  return std::make_unique<StagedComm>(std::move(host), std::move(staging));
}

}  // namespace gt
