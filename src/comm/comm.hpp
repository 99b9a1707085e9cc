#pragma once
// One communicator interface for everything the trainer sends: collectives and point-to-point on device
// buffers. Backends: MPI (CPU builds, or CUDA-aware MPI) and NCCL (GPU builds). Each process-grid group
// (TP, PP, DP, ...) is one Comm. Blocking calls and waits accumulate the time the caller was blocked, which
// is the communication time exposed on the critical path (metrics report it per group).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/watchdog.hpp"

namespace gt {

// BF16/F16: 16-bit floats (kernels/half.hpp's bf16_t/fp16_t bits); sums widen to float and round once per
// addition, on every backend and algorithm (MPI: a user op, src/comm/half_sum.hpp; NCCL: its own types).
enum class DType { F32, F64, I32, I64, U8, BF16, F16 };
enum class ReduceOp { Sum, Max, Min };
// Algorithm for float/double sum all-reduce: the library collective, our ring on send/recv, or the node
// shared-memory path (MPI-3 shared windows; falls back to the ring when the group spans nodes).
// Auto: the shared-memory all-reduce when the communicator lies on one node, the library collective when it
// spans nodes (decided once, collectively, when the communicator is made).
enum class AllreduceAlgo { Library, Ring, Shm, Auto };

size_t dtype_size(DType t);
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }

AllreduceAlgo parse_allreduce_algo(const std::string& name);  // "mpi" | "ring" | "shm" | "auto"; throws gt::Error

// Which library carries the groups whose buffers live on the device (TP, PP, DP, embedding): MPI on host memory
// (CPU builds) or reading device memory itself (a CUDA-aware MPI), MPI through pinned host copies (comm_staged.hpp:
// GPU builds over an MPI that cannot read device memory, and ranks that share a GPU), or NCCL (GPU builds, one
// device per rank). Host-side groups (world, model-parallel norm) always use MPI.
enum class CommBackend { Mpi, MpiStaged, Nccl };
// parallel.comm: "mpi", "nccl", or "auto". auto: NCCL when this build has it, tensors live on the GPU and every rank
// of the node has a GPU of its own; otherwise MPI. MPI on GPU memory is host-staged unless the library reports CUDA
// support (mpi_cuda_aware, from mpi_reports_cuda_support()). Throws gt::Error naming the key when the choice cannot
// work: "nccl" without NCCL or without device memory, or with ranks sharing a GPU (NCCL refuses a duplicate device).
CommBackend resolve_comm_backend(const std::string& name, bool device_is_cuda, bool mpi_cuda_aware,
                                 bool ranks_share_device = false);
// Whether the MPI library says it accepts CUDA device pointers: MPIX_Query_cuda_support() (Open MPI's mpi-ext.h
// and MPICH >= 4), false where the library has no such query. Call after MPI_Init.
bool mpi_reports_cuda_support();
// Collective over `world`: whether more ranks of one node than it has GPUs (`devices`, this rank's count) run on
// it, so that some must share a device.
bool ranks_share_device(MPI_Comm world, int devices);
// The all-reduce algorithm of the device groups: a CUDA-aware MPI reads device memory only in its own
// MPI_Allreduce (the ring and shm algorithms add on the host), so "auto" becomes it and "ring"/"shm" are an error
// naming parallel.allreduce. Host staging and host builds take every algorithm: returned unchanged.
AllreduceAlgo device_allreduce_algo(AllreduceAlgo requested, CommBackend backend, bool device_is_cuda);
// "mpi", "mpi-staged" or "nccl": what the start line and reports call it.
const char* comm_backend_name(CommBackend b);

// True while an exception unwinds the stack. Destructors of communicators, windows and requests then skip what
// would block on other ranks (waits, MPI_Win_free, draining queued collectives) and leak instead: after an error
// on one rank the others sit in some other collective, so a blocking clean-up would hang the job before the error
// handler could report it and abort (src/cli/main.cpp). The process ends right after.
inline bool unwinding() { return std::uncaught_exceptions() > 0; }

// Handle of a non-blocking operation. test() makes progress and returns true once complete; wait() blocks.
class Request {
 public:
  virtual ~Request() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};
using RequestPtr = std::unique_ptr<Request>;

// One message of a group of point-to-point operations (Comm::exchange).
struct P2POp {
  bool send;  // else receive into buf
  void* buf;
  size_t count;
  DType type;
  int peer;
  int tag;
};

struct CommStats {
  double blocked_seconds = 0;  // time callers spent inside blocking calls, test() and wait()
  double bytes = 0;            // payload bytes handed to collectives / sends
  long calls = 0;
  void reset() { *this = CommStats{}; }
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi" or "nccl"

  // In place. Sum of F32/F64 uses the selected AllreduceAlgo; other types/ops use the library (BF16/F16: sum
  // only, on every algorithm by the library: the ring and shm paths add floats).
  virtual void allreduce(void* buf, size_t count, DType t, ReduceOp op) = 0;
  virtual RequestPtr iallreduce(void* buf, size_t count, DType t, ReduceOp op) = 0;
  // recv gets block `rank()` (recv_count elements) of the reduction of send (size() * recv_count elements).
  virtual void reduce_scatter(const void* send, void* recv, size_t recv_count, DType t, ReduceOp op) = 0;
  // recv (size() * send_count elements) gets every rank's send block in rank order. In place when send is
  // recv's own block (recv + rank() * send_count elements).
  virtual void allgather(const void* send, void* recv, size_t send_count, DType t) = 0;
  // Non-blocking forms of the two (ZeRO: gradients into their owner's shard, updated shards back to all).
  // send and recv must stay untouched until the request completes.
  virtual RequestPtr ireduce_scatter(const void* send, void* recv, size_t recv_count, DType t, ReduceOp op) = 0;
  virtual RequestPtr iallgather(const void* send, void* recv, size_t send_count, DType t) = 0;
  // Uneven blocks: send holds sum(counts) elements, block r (counts[r] elements) in rank order; recv gets the
  // reduction of block rank(). A gradient bucket is a contiguous range of the flat buffer that meets each DP
  // shard in a piece of its own length (ZeRO-2).
  virtual RequestPtr ireduce_scatter_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t,
                                       ReduceOp op) = 0;
  // Uneven all-gather: recv gets block r (counts[r] elements, in rank order, contiguous) from rank r; send
  // holds counts[rank()] elements (in place when send is recv's own block). ZeRO-3: a unit's parameters, which
  // meet each DP shard in a piece of its own length.
  virtual RequestPtr iallgather_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t) = 0;
  virtual void broadcast(void* buf, size_t count, DType t, int root) = 0;
  virtual void send(const void* buf, size_t count, DType t, int peer, int tag) = 0;
  virtual void recv(void* buf, size_t count, DType t, int peer, int tag) = 0;
  virtual RequestPtr isend(const void* buf, size_t count, DType t, int peer, int tag) = 0;
  virtual RequestPtr irecv(void* buf, size_t count, DType t, int peer, int tag) = 0;
  virtual void barrier() = 0;
  // Issues the messages together and returns one request per message, in order. NCCL: one ncclGroupStart/End, so
  // that a send and a receive two ranks address to each other in one group cannot wait on each other (a lone
  // ncclSend holds its stream until the peer's receive runs); its requests complete together. Others: isend/irecv.
  virtual std::vector<RequestPtr> exchange(const std::vector<P2POp>& msgs) {
    std::vector<RequestPtr> reqs;
    for (const P2POp& m : msgs)
      reqs.push_back(m.send ? isend(m.buf, m.count, m.type, m.peer, m.tag) : irecv(m.buf, m.count, m.type, m.peer, m.tag));
    return reqs;
  }

  // Collective. Memory in which the shm all-reduce works without copies (see shm_allreduce.hpp): this
  // rank's part of a shared region of `bytes`, zero-filled; nullptr where the backend has no such path (then
  // use ordinary memory). At most one region per communicator; it lives as long as the communicator.
  virtual void* alloc_registered(size_t bytes) { return nullptr; }
  // Rank k's part of the registered region (this rank's own included), readable and writable by every rank of
  // the node: nullptr before alloc_registered or where there is none. ZeRO-2/3 on one node (src/comm/node_shm.hpp)
  // reduce and gather straight from the peers' parts, with no MPI call that would need progress.
  virtual void* registered_peer(int k) { return nullptr; }
  // What the communication watchdog names for this group (nullptr: unnamed); for waits outside the backend.
  virtual const watchdog::Group* watch_group() const { return nullptr; }

  virtual void set_allreduce_algo(AllreduceAlgo algo) = 0;
  virtual AllreduceAlgo allreduce_algo() const = 0;

  CommStats& stats() { return stats_; }

  // Typed conveniences.
  template <class T> void allreduce_sum(T* buf, size_t n) { allreduce(buf, n, dtype_of<T>(), ReduceOp::Sum); }
  template <class T> void allreduce_max(T* buf, size_t n) { allreduce(buf, n, dtype_of<T>(), ReduceOp::Max); }
  template <class T> RequestPtr iallreduce_sum(T* buf, size_t n) {
    return iallreduce(buf, n, dtype_of<T>(), ReduceOp::Sum);
  }

 protected:
  CommStats stats_;
};

// MPI backend over a communicator the caller keeps alive (Grid owns the MPI_Comm handles).
std::unique_ptr<Comm> make_mpi_comm(MPI_Comm comm, AllreduceAlgo algo);

#if defined(GRIDTRAIN_HAVE_NCCL)
// NCCL backend: the unique id is created on rank 0 of `comm` and broadcast over MPI.
// compute_stream: the cudaStream_t the device work runs on (kernels/device_stream.hpp), nullptr for the legacy
// default stream. Every collective waits on it through an event, so it sees what the kernels enqueued before it.
std::unique_ptr<Comm> make_nccl_comm(MPI_Comm comm, void* compute_stream);
int nccl_version();  // ncclGetVersion(); needs no device (the link check calls it)
#endif
bool nccl_compiled();

// The algorithms themselves, callable directly (tests compare them, the benchmark times them).
// In place sum over `comm`, any rank count and any length (not only multiples of the size).
void ring_allreduce_sum(MPI_Comm comm, float* buf, size_t n);
void ring_allreduce_sum(MPI_Comm comm, double* buf, size_t n);

}  // namespace gt
