// Node shared-memory all-reduce; see shm_allreduce.hpp for the protocol.
#include "src/comm/shm_allreduce.hpp"

#include <algorithm>
#include <cstring>

#include "src/comm/comm.hpp"
#include "src/comm/ring_allreduce.hpp"

namespace gt {

namespace {
// Collective over node: a shared window of `bytes` per rank (each part on its owner's NUMA node), the base of
// every rank's part in `bases`, locked in one passive epoch for the window's life (MPI_Win_sync orders).
// Returns this rank's part.
void* allocate_shared(MPI_Comm node, int size, size_t bytes, MPI_Win* win, std::vector<char*>& bases) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* mine = nullptr;
  MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, node, &mine, win);
  MPI_Info_free(&info);
  bases.resize(size);
  for (int k = 0; k < size; ++k) {
    MPI_Aint b = 0;
    int disp = 0;
    void* base = nullptr;
    MPI_Win_shared_query(*win, k, &b, &disp, &base);
    bases[k] = static_cast<char*>(base);
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, *win);
  return mine;
}
}  // namespace

ShmAllreduce::ShmAllreduce(MPI_Comm comm, size_t piece_bytes)
    : comm_(comm), piece_bytes_(std::max<size_t>(piece_bytes / 64 * 64, 64)) {
  int world_size = 1;
  MPI_Comm_size(comm, &world_size);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_);
  MPI_Comm_rank(node_, &rank_);
  MPI_Comm_size(node_, &size_);
  int all_local = size_ == world_size, everywhere = 0;
  MPI_Allreduce(&all_local, &everywhere, 1, MPI_INT, MPI_LAND, comm);
  single_node_ = everywhere != 0;
  if (!single_node_) return;
  allocate_shared(node_, size_, 2 * piece_bytes_, &win_, slot_);
}

ShmAllreduce::~ShmAllreduce() {
  if (unwinding()) return;  // MPI_Win_free synchronises the node: leak the windows instead (comm.hpp)
  if (reg_win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(reg_win_);
    MPI_Win_free(&reg_win_);
  }
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

// Makes every rank's stores to the segment visible to the others before anyone continues.
void ShmAllreduce::sync() {
  MPI_Win_sync(win_);
  if (reg_win_ != MPI_WIN_NULL) MPI_Win_sync(reg_win_);
  MPI_Barrier(node_);
  MPI_Win_sync(win_);
  if (reg_win_ != MPI_WIN_NULL) MPI_Win_sync(reg_win_);
}

void* ShmAllreduce::register_region(size_t bytes) {
  if (!single_node_ || reg_win_ != MPI_WIN_NULL) return nullptr;
  void* mine = allocate_shared(node_, size_, std::max<size_t>(bytes, 64), &reg_win_, reg_);
  std::memset(mine, 0, bytes);
  reg_bytes_ = bytes;
  sync();
  return mine;
}

// buf lies in this rank's registered region at offset_bytes, and so do every rank's.
template <class T>
void ShmAllreduce::sum_registered(T* buf, size_t n, size_t offset_bytes) {
  const int p = size_, me = rank_;
  auto region = [&](int k) { return reinterpret_cast<T*>(reg_[k] + offset_bytes); };
  // Pieces small enough that a piece's reduce and gather run while its data are still in cache.
  const size_t piece = std::max<size_t>(kRegisteredPieceBytes / sizeof(T), 1);
  constexpr size_t kTile = 1024;
  T acc[kTile];
  sync();  // every rank's buffer is complete
  for (size_t off = 0; off < n; off += piece) {
    const size_t m = std::min(piece, n - off);
    auto slice = [&](int k) { return off + m * size_t(k) / size_t(p); };
    const size_t lo = slice(me), hi = slice(me + 1);
    for (size_t t = lo; t < hi; t += kTile) {  // rank order 0..p-1, as the copying path: same bits
      const size_t len = std::min(kTile, hi - t);
      const T* first = region(0) + t;
      for (size_t i = 0; i < len; ++i) acc[i] = first[i];
      for (int k = 1; k < p; ++k) {
        const T* in = region(k) + t;
        for (size_t i = 0; i < len; ++i) acc[i] += in[i];
      }
      std::memcpy(buf + t, acc, len * sizeof(T));
    }
    sync();  // every slice of this piece is reduced in its owner's region
    for (int k = 0; k < p; ++k)
      if (k != me) std::memcpy(buf + slice(k), region(k) + slice(k), (slice(k + 1) - slice(k)) * sizeof(T));
    // the next piece's reduce reads other elements: no barrier needed before it
  }
  sync();  // nobody still reads this rank's region when sum() returns and the caller writes it
}

// buf: (n). Slice k of a piece of m elements: [m*k/n, m*(k+1)/n).
template <class T>
void ShmAllreduce::sum_impl(T* buf, size_t n) {
  if (!single_node_) {
    RingAllreduce<T>(comm_, buf, n, 0x5348 /* "SH" */).progress(true);
    return;
  }
  if (size_ == 1 || n == 0) return;
  if (reg_bytes_ > 0 && n * sizeof(T) >= kRegisteredMinBytes) {
    // Zero copy when every rank's buffer sits at the same offset of its registered region.
    const char* b = reinterpret_cast<const char*>(buf);
    const bool inside = b >= reg_[rank_] && b + n * sizeof(T) <= reg_[rank_] + reg_bytes_;
    const long long off = inside ? static_cast<long long>(b - reg_[rank_]) : -1;
    long long mm[2] = {off, -off}, agreed[2] = {0, 0};
    MPI_Allreduce(mm, agreed, 2, MPI_LONG_LONG, MPI_MIN, node_);
    if (agreed[0] >= 0 && agreed[0] == -agreed[1]) return sum_registered(buf, n, static_cast<size_t>(off));
  }
  const size_t piece = piece_bytes_ / sizeof(T);
  const int p = size_, me = rank_;
  auto slice = [&](size_t m, int k) { return m * size_t(k) / size_t(p); };
  constexpr size_t kTile = 1024;  // accumulate in L1, store once
  T acc[kTile];
  for (size_t off = 0; off < n; off += piece, ++pieces_done_) {
    const size_t m = std::min(piece, n - off);
    const size_t half = (pieces_done_ % 2) * piece_bytes_;
    T* src = buf + off;
    auto slot = [&](int k) { return reinterpret_cast<T*>(slot_[k] + half); };
    // 1. publish the slices the others reduce
    for (int k = 0; k < p; ++k)
      if (k != me) std::memcpy(slot(me) + slice(m, k), src + slice(m, k), (slice(m, k + 1) - slice(m, k)) * sizeof(T));
    sync();
    // 2. reduce my slice over all ranks in rank order (own contribution straight from buf)
    const size_t lo = slice(m, me), hi = slice(m, me + 1);
    for (size_t t = lo; t < hi; t += kTile) {
      const size_t len = std::min(kTile, hi - t);
      const T* first = me == 0 ? src + t : slot(0) + t;
      for (size_t i = 0; i < len; ++i) acc[i] = first[i];
      for (int k = 1; k < p; ++k) {
        const T* in = k == me ? src + t : slot(k) + t;
        for (size_t i = 0; i < len; ++i) acc[i] += in[i];
      }
      std::memcpy(slot(me) + t, acc, len * sizeof(T));
      std::memcpy(src + t, acc, len * sizeof(T));
    }
    sync();
    // 3. collect the other slices from their owners
    for (int k = 0; k < p; ++k)
      if (k != me) std::memcpy(src + slice(m, k), slot(k) + slice(m, k), (slice(m, k + 1) - slice(m, k)) * sizeof(T));
  }
}

void ShmAllreduce::sum(float* buf, size_t n) { sum_impl(buf, n); }
void ShmAllreduce::sum(double* buf, size_t n) { sum_impl(buf, n); }

}  // namespace gt
