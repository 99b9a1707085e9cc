#pragma once
// Chunked, pipelined ring all-reduce (sum) on MPI point-to-point, as a resumable state machine so that a
// non-blocking all-reduce can advance it from Request::test(). Internal to src/comm (tests may include it).
//
// The n elements are split into p blocks (sizes differ by at most one); each block into sub-chunks of
// `chunk_elems`. Steps 0..p-2 are the reduce-scatter (receive a chunk into a staging slot, add it into buf,
// forward it), steps p-1..2p-3 the all-gather (receive the finished chunk into buf, forward it). A chunk is
// forwarded as soon as it has arrived, so later chunks travel while this one is being reduced. Each block
// is summed in one fixed order around the ring and then copied, so all ranks get identical bits.
#include <mpi.h>

#include <cstddef>
#include <vector>

namespace gt {

template <class T>
class RingAllreduce {
 public:
  // buf: (n) in place. Uses tags `tag` and `tag`+1, which must be unique among ring operations in flight on
  // `comm`. Step-0 sends are posted with their receives, later ones as chunks arrive, so the two streams
  // interleave; a tag per stream keeps MPI's in-order matching aligned with the unit order.
  RingAllreduce(MPI_Comm comm, T* buf, size_t n, int tag, size_t chunk_elems = 64 * 1024, int window = 4);
  ~RingAllreduce();
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  // Advances as far as possible without blocking (block=false) or to completion (block=true).
  // Returns true once the result is in buf and every send has completed.
  bool progress(bool block);
  bool done() const { return finished_; }

 private:
  size_t block_begin(int b) const;
  int unit_block(long u, bool sending) const;
  void unit_range(long u, bool sending, size_t& lo, size_t& hi) const;
  int step_tag(long u) const { return u < k_ ? tag_ : tag_ + 1; }
  bool try_post_recv(bool block);
  void post_send(long u);

  MPI_Comm comm_;
  T* buf_;
  size_t n_;
  int tag_, p_ = 1, r_ = 0, window_;
  size_t chunk_ = 1;
  long k_ = 1;       // sub-chunks per block
  long units_ = 0;   // 2 (p-1) k
  long posted_ = 0;  // receives posted (units in order)
  long done_ = 0;    // receives completed and consumed
  std::vector<T> staging_;                 // window_ slots of chunk_ elements (reduce-scatter receives)
  std::vector<MPI_Request> recv_reqs_;     // window_ slots
  std::vector<MPI_Request> send_reqs_;     // one per unit
  bool finished_ = false;
};

extern template class RingAllreduce<float>;
extern template class RingAllreduce<double>;

}  // namespace gt
