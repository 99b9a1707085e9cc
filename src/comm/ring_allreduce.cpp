// Chunked, pipelined ring all-reduce; see ring_allreduce.hpp for the schedule.
#include "src/comm/ring_allreduce.hpp"

#include <algorithm>
#include <cstring>

#include "src/comm/comm.hpp"

namespace gt {

namespace {
template <class T> MPI_Datatype mpi_of();
template <> MPI_Datatype mpi_of<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpi_of<double>() { return MPI_DOUBLE; }
}  // namespace

template <class T>
RingAllreduce<T>::RingAllreduce(MPI_Comm comm, T* buf, size_t n, int tag, size_t chunk_elems, int window)
    : comm_(comm), buf_(buf), n_(n), tag_(tag), window_(std::max(1, window)) {
  MPI_Comm_size(comm, &p_);
  MPI_Comm_rank(comm, &r_);
  if (p_ == 1 || n_ == 0) {
    finished_ = true;
    return;
  }
  const size_t max_block = (n_ + p_ - 1) / p_;
  chunk_ = std::max<size_t>(1, std::min(chunk_elems, max_block));
  k_ = long((max_block + chunk_ - 1) / chunk_);
  units_ = 2L * (p_ - 1) * k_;
  staging_.resize(size_t(window_) * chunk_);
  recv_reqs_.assign(window_, MPI_REQUEST_NULL);
  send_reqs_.assign(units_, MPI_REQUEST_NULL);
}

template <class T>
RingAllreduce<T>::~RingAllreduce() {
  if (finished_) return;
  if (unwinding()) {
    // Do not wait for the peers (comm.hpp), but never leave receives pointing into freed memory: the staging
    // buffer is leaked (a move keeps its address), buf belongs to the caller.
    new std::vector<T>(std::move(staging_));
    return;
  }
  progress(true);
}

template <class T>
size_t RingAllreduce<T>::block_begin(int b) const {
  return (n_ / p_) * size_t(b) + std::min<size_t>(size_t(b), n_ % p_);
}

// Reduce-scatter step s sends block r-s and receives r-s-1; all-gather step s' = s-(p-1) sends block
// r+1-s' and receives r-s'. So the block received at step s is the one sent at step s+1.
template <class T>
int RingAllreduce<T>::unit_block(long u, bool sending) const {
  const int s = int(u / k_);
  int b;
  if (s < p_ - 1) b = sending ? r_ - s : r_ - s - 1;
  else b = sending ? r_ + 1 - (s - (p_ - 1)) : r_ - (s - (p_ - 1));
  return ((b % p_) + p_) % p_;
}

// Elements [lo, hi) of unit u = step * k + sub-chunk (empty for the short blocks' missing tail).
template <class T>
void RingAllreduce<T>::unit_range(long u, bool sending, size_t& lo, size_t& hi) const {
  const int b = unit_block(u, sending);
  lo = std::min(block_begin(b) + size_t(u % k_) * chunk_, block_begin(b + 1));
  hi = std::min(lo + chunk_, block_begin(b + 1));
}

template <class T>
void RingAllreduce<T>::post_send(long u) {
  size_t lo, hi;
  unit_range(u, true, lo, hi);
  MPI_Isend(buf_ + lo, int(hi - lo), mpi_of<T>(), (r_ + 1) % p_, step_tag(u), comm_, &send_reqs_[u]);
}

template <class T>
bool RingAllreduce<T>::try_post_recv(bool block) {
  const long u = posted_;
  const int s = int(u / k_);
  size_t lo, hi;
  unit_range(u, false, lo, hi);
  T* dst = staging_.data() + size_t(u % window_) * chunk_;
  if (s >= p_ - 1) {
    // All-gather receives straight into buf; that region was last read by our reduce-scatter send at
    // step s-(p-1), which must have completed before MPI may overwrite it.
    MPI_Request& earlier = send_reqs_[long(s - (p_ - 1)) * k_ + u % k_];
    int flag = 0;
    MPI_Test(&earlier, &flag, MPI_STATUS_IGNORE);
    if (!flag) {
      if (!block || posted_ > done_) return false;
      MPI_Wait(&earlier, MPI_STATUS_IGNORE);
    }
    dst = buf_ + lo;
  }
  MPI_Irecv(dst, int(hi - lo), mpi_of<T>(), (r_ + p_ - 1) % p_, step_tag(u), comm_, &recv_reqs_[u % window_]);
  if (s == 0) post_send(u);  // first step: our own data can go as soon as the matching receive is up
  ++posted_;
  return true;
}

template <class T>
bool RingAllreduce<T>::progress(bool block) {
  if (finished_) return true;
  while (done_ < units_) {
    while (posted_ < units_ && posted_ - done_ < window_)
      if (!try_post_recv(block)) break;
    if (posted_ == done_) return false;  // non-blocking and waiting for an earlier send to drain
    const long u = done_;
    MPI_Request& rq = recv_reqs_[u % window_];
    int flag = 0;
    if (block) {
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      flag = 1;
    } else {
      MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
    }
    if (!flag) return false;
    const int s = int(u / k_);
    if (s < p_ - 1) {
      size_t lo, hi;
      unit_range(u, false, lo, hi);
      const T* in = staging_.data() + size_t(u % window_) * chunk_;
      T* out = buf_ + lo;
      for (size_t i = 0; i < hi - lo; ++i) out[i] += in[i];
    }
    if (s + 1 < 2 * (p_ - 1)) post_send(u + k_);
    ++done_;
  }
  int flag = 0;
  if (block) {
    MPI_Waitall(int(send_reqs_.size()), send_reqs_.data(), MPI_STATUSES_IGNORE);
    flag = 1;
  } else {
    MPI_Testall(int(send_reqs_.size()), send_reqs_.data(), &flag, MPI_STATUSES_IGNORE);
  }
  finished_ = flag != 0;
  return finished_;
}

template class RingAllreduce<float>;
template class RingAllreduce<double>;

// The blocking form on the caller's communicator uses one fixed tag: do not run two at once on one comm.
constexpr int kRingTag = 0x4752;  // "GR"
void ring_allreduce_sum(MPI_Comm comm, float* buf, size_t n) { RingAllreduce<float>(comm, buf, n, kRingTag).progress(true); }
void ring_allreduce_sum(MPI_Comm comm, double* buf, size_t n) { RingAllreduce<double>(comm, buf, n, kRingTag).progress(true); }

}  // namespace gt
