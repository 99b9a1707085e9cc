// Ring all-reduce on MPI point-to-point: reduce-scatter then all-gather over n blocks (block sizes differ by
// at most one element, so any length works, including fewer elements than ranks). Each block is reduced in
// one fixed order around the ring and then copied, so every rank ends with the same bits.
#include <mpi.h>

#include <vector>

#include "src/comm/comm.hpp"

namespace gt {

namespace {

template <class T>
MPI_Datatype mpi_of();
template <>
MPI_Datatype mpi_of<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_of<double>() { return MPI_DOUBLE; }

template <class T>
void ring(MPI_Comm comm, T* buf, size_t n) {
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  if (p == 1 || n == 0) return;
  auto begin = [&](int b) { return (n / p) * size_t(b) + std::min<size_t>(size_t(b), n % p); };
  auto len = [&](int b) { return begin(b + 1) - begin(b); };
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  std::vector<T> tmp(len(0));
  // reduce-scatter: after p-1 steps rank r owns the full sum of block (r + 1) % p
  for (int s = 0; s < p - 1; ++s) {
    const int send_b = (r - s + p) % p, recv_b = (r - s - 1 + p) % p;
    MPI_Sendrecv(buf + begin(send_b), int(len(send_b)), mpi_of<T>(), right, 0, tmp.data(), int(len(recv_b)),
                 mpi_of<T>(), left, 0, comm, MPI_STATUS_IGNORE);
    T* dst = buf + begin(recv_b);
    for (size_t i = 0; i < len(recv_b); ++i) dst[i] += tmp[i];
  }
  // all-gather: pass the finished blocks around
  for (int s = 0; s < p - 1; ++s) {
    const int send_b = (r + 1 - s + p) % p, recv_b = (r - s + p) % p;
    MPI_Sendrecv(buf + begin(send_b), int(len(send_b)), mpi_of<T>(), right, 1, buf + begin(recv_b),
                 int(len(recv_b)), mpi_of<T>(), left, 1, comm, MPI_STATUS_IGNORE);
  }
}

}  // namespace

void ring_allreduce_sum(MPI_Comm comm, float* buf, size_t n) { ring(comm, buf, n); }
void ring_allreduce_sum(MPI_Comm comm, double* buf, size_t n) { ring(comm, buf, n); }

bool nccl_compiled() {
#if defined(GRIDTRAIN_HAVE_NCCL)
  return true;
#else
  return false;
#endif
}

}  // namespace gt
