#pragma once
// Node shared-memory all-reduce (sum) over MPI-3 shared windows. Internal to src/comm (the benchmark and
// tests use it directly).
//
// Each rank owns a slot of 2 x piece_bytes in one shared segment (allocated once, reused). A buffer is
// processed in pieces; for each piece: every rank copies the slices other ranks will reduce into its slot
// (its own slice it reads straight from its buffer), barrier, rank i sums slice i over all slots in rank
// order 0..n-1 (so every rank gets the same bits) and writes it to its buffer and its slot, barrier, every
// rank copies the other slices back from their owners' slots. Pieces alternate between the two halves of a
// slot, so one barrier per phase suffices: a half is rewritten only after everybody passed the next
// piece's first barrier, i.e. finished copying out of it.
//
// When the communicator spans several nodes the shared segment is not used and sum() runs the ring
// (ring_allreduce.hpp) on the whole communicator instead.
#include <mpi.h>

#include <cstddef>
#include <vector>

namespace gt {

class ShmAllreduce {
 public:
  static constexpr size_t kDefaultPieceBytes = size_t(4) << 20;
  // Collective over comm (the communicator must outlive this object).
  explicit ShmAllreduce(MPI_Comm comm, size_t piece_bytes = kDefaultPieceBytes);
  ~ShmAllreduce();  // collective (frees the window)
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  bool single_node() const { return single_node_; }
  size_t piece_bytes() const { return piece_bytes_; }
  // buf: (n) in place, collective over comm.
  void sum(float* buf, size_t n);
  void sum(double* buf, size_t n);

 private:
  template <class T> void sum_impl(T* buf, size_t n);
  void sync();

  MPI_Comm comm_;
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  bool single_node_ = false;
  int rank_ = 0, size_ = 1;
  size_t piece_bytes_;
  std::vector<char*> slot_;  // slot_[k]: base of rank k's 2 x piece_bytes
  unsigned long pieces_done_ = 0;  // selects the half; persists across calls (see above)
};

}  // namespace gt
