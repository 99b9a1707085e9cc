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
// Registered buffers (zero copy): register_region(bytes) allocates a second shared segment of `bytes` per
// rank and returns this rank's part. When every rank calls sum() on the same offset inside its registered
// region (checked with one small allreduce), no rank copies its data into a slot: after a barrier rank i sums
// slice i straight out of every rank's region into its own, barrier, every rank copies the other slices from
// their owners' regions, barrier (so that nobody writes its buffer while another still reads it). Per rank
// that moves 2.5 n elements instead of 4 n (for two ranks), which is what matters at sizes where the sum is
// bound by memory traffic. The trainer allocates its gradient store there on CPU builds with dp > 1 and
// parallel.allreduce=shm.
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
  // Registered buffers: below kRegisteredMinBytes the copying path is faster (fewer barriers); above, the
  // zero-copy path works in pieces of kRegisteredPieceBytes.
  static constexpr size_t kRegisteredMinBytes = size_t(512) << 10;
  static constexpr size_t kRegisteredPieceBytes = size_t(1) << 20;
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
  // Collective. This rank's part of a new shared region of `bytes` (zero-filled), or nullptr when the
  // communicator spans several nodes or a region is already registered.
  void* register_region(size_t bytes);
  // Rank k's part of the registered region (nullptr when none is registered).
  void* region(int k) const { return reg_win_ != MPI_WIN_NULL ? reg_[k] : nullptr; }

 private:
  template <class T> void sum_impl(T* buf, size_t n);
  template <class T> void sum_registered(T* buf, size_t n, size_t offset_bytes);
  void sync();

  MPI_Comm comm_;
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  bool single_node_ = false;
  int rank_ = 0, size_ = 1;
  size_t piece_bytes_;
  std::vector<char*> slot_;  // slot_[k]: base of rank k's 2 x piece_bytes
  unsigned long pieces_done_ = 0;  // selects the half; persists across calls (see above)
  MPI_Win reg_win_ = MPI_WIN_NULL;
  size_t reg_bytes_ = 0;
  std::vector<char*> reg_;  // reg_[k]: base of rank k's registered region
};

}  // namespace gt
