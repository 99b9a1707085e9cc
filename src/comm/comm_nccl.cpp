// NCCL backend of gt::Comm (GPU builds): buffers are device pointers. Every op runs on this communicator's own
// stream after waiting (an event, no host sync) for the compute stream the kernels and cuBLAS run on, so it reads
// what they wrote before the call; blocking calls then synchronise the host with the op, so what the host enqueues
// afterwards sees the result. A second stream (not the compute stream itself) lets a non-blocking all-reduce of
// one gradient bucket overlap the backward kernels of the next unit, as llm.c does. The unique id comes from
// rank 0 over MPI.
#include <cuda_runtime.h>
#include <nccl.h>

#include "src/comm/comm.hpp"
#include "src/core/error.hpp"

namespace gt {

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("nccl: ") + what + " failed: " + ncclGetErrorString(r));
}
void cuda_check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw Error(std::string("cuda: ") + what + " failed: " + cudaGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8: return ncclUint8;
    case DType::BF16: return ncclBfloat16;  // NCCL >= 2.10
    case DType::F16: return ncclFloat16;
  }
  return ncclUint8;
}
ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Max ? ncclMax : op == ReduceOp::Min ? ncclMin : ncclSum; }

class NcclRequest : public Request {
 public:
  NcclRequest(cudaStream_t s, CommStats& st) : stats_(st) {
    cuda_check(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventRecord(ev_, s), "cudaEventRecord");
  }
  ~NcclRequest() override {
    if (!unwinding()) cudaEventSynchronize(ev_);  // an unfinished event is released when it completes
    cudaEventDestroy(ev_);
  }
  bool test() override {
    const double t0 = MPI_Wtime();
    const cudaError_t r = cudaEventQuery(ev_);
    stats_.blocked_seconds += MPI_Wtime() - t0;
    if (r == cudaErrorNotReady) return false;
    cuda_check(r, "cudaEventQuery");
    return true;
  }
  void wait() override {
    const double t0 = MPI_Wtime();
    cuda_check(cudaEventSynchronize(ev_), "cudaEventSynchronize");
    stats_.blocked_seconds += MPI_Wtime() - t0;
  }

 private:
  cudaEvent_t ev_;
  CommStats& stats_;
};

class NcclComm : public Comm {
 public:
  NcclComm(MPI_Comm c, cudaStream_t compute) : compute_(compute) {
    MPI_Comm_rank(c, &rank_);
    MPI_Comm_size(c, &size_);
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c);
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreateWithFlags(&computed_, cudaEventDisableTiming), "cudaEventCreate");
    nccl_check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclComm() override {
    if (unwinding()) {  // peers may never join what is in flight: abort it instead of waiting (comm.hpp)
      ncclCommAbort(comm_);
      return;
    }
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaEventDestroy(computed_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  void allreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    count(n * dtype_size(t));
    nccl_check(ncclAllReduce(buf, buf, n, nccl_type(t), nccl_op(op), comm_, stream_), "ncclAllReduce");
    sync();
  }
  RequestPtr iallreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    count(n * dtype_size(t));
    nccl_check(ncclAllReduce(buf, buf, n, nccl_type(t), nccl_op(op), comm_, stream_), "ncclAllReduce");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  void reduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    count(rc * size_ * dtype_size(t));
    nccl_check(ncclReduceScatter(send, recv, rc, nccl_type(t), nccl_op(op), comm_, stream_), "ncclReduceScatter");
    sync();
  }
  void allgather(const void* send, void* recv, size_t sc, DType t) override {
    count(sc * size_ * dtype_size(t));
    nccl_check(ncclAllGather(send, recv, sc, nccl_type(t), comm_, stream_), "ncclAllGather");
    sync();
  }
  // NCCL's all-gather is in place when send is recv's own block, the same convention as Comm's.
  RequestPtr ireduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    count(rc * size_ * dtype_size(t));
    nccl_check(ncclReduceScatter(send, recv, rc, nccl_type(t), nccl_op(op), comm_, stream_), "ncclReduceScatter");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  RequestPtr iallgather(const void* send, void* recv, size_t sc, DType t) override {
    count(sc * size_ * dtype_size(t));
    nccl_check(ncclAllGather(send, recv, sc, nccl_type(t), comm_, stream_), "ncclAllGather");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  // NCCL has no uneven reduce-scatter: one reduce per block to its owner, fused into one group.
  RequestPtr ireduce_scatter_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t,
                               ReduceOp op) override {
    if (int(counts.size()) != size_) throw Error("comm: reduce_scatter_v got a count per rank of another group");
    size_t off = 0;
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      count(counts[r] * dtype_size(t));
      const char* block = static_cast<const char*>(send) + off * dtype_size(t);
      if (counts[r] > 0)
        nccl_check(ncclReduce(block, recv, counts[r], nccl_type(t), nccl_op(op), r, comm_, stream_), "ncclReduce");
      off += counts[r];
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  // NCCL has no uneven all-gather: one broadcast per block from its owner, fused into one group.
  RequestPtr iallgather_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t) override {
    if (int(counts.size()) != size_) throw Error("comm: allgather_v got a count per rank of another group");
    size_t off = 0;
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      count(counts[r] * dtype_size(t));
      char* block = static_cast<char*>(recv) + off * dtype_size(t);
      if (counts[r] > 0)
        nccl_check(ncclBroadcast(r == rank_ ? send : block, block, counts[r], nccl_type(t), r, comm_, stream_),
                   "ncclBroadcast");
      off += counts[r];
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  void broadcast(void* buf, size_t n, DType t, int root) override {
    count(n * dtype_size(t));
    nccl_check(ncclBroadcast(buf, buf, n, nccl_type(t), root, comm_, stream_), "ncclBroadcast");
    sync();
  }
  // NCCL has no tags: point-to-point messages between a pair match in issue order.
  void send(const void* buf, size_t n, DType t, int peer, int tag) override {
    isend(buf, n, t, peer, tag)->wait();
  }
  void recv(void* buf, size_t n, DType t, int peer, int tag) override { irecv(buf, n, t, peer, tag)->wait(); }
  RequestPtr isend(const void* buf, size_t n, DType t, int peer, int tag) override {
    count(n * dtype_size(t));
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    nccl_check(ncclSend(buf, n, nccl_type(t), peer, comm_, stream_), "ncclSend");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  RequestPtr irecv(void* buf, size_t n, DType t, int peer, int tag) override {
    count(n * dtype_size(t));
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    nccl_check(ncclRecv(buf, n, nccl_type(t), peer, comm_, stream_), "ncclRecv");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    return std::make_unique<NcclRequest>(stream_, stats_);
  }
  std::vector<RequestPtr> exchange(const std::vector<P2POp>& msgs) override {
    count(0);
    stats_.calls -= 1;  // counted per message below
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (const P2POp& m : msgs) {
      stats_.bytes += double(m.count * dtype_size(m.type));
      stats_.calls += 1;
      if (m.send)
        nccl_check(ncclSend(m.buf, m.count, nccl_type(m.type), m.peer, comm_, stream_), "ncclSend");
      else
        nccl_check(ncclRecv(m.buf, m.count, nccl_type(m.type), m.peer, comm_, stream_), "ncclRecv");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    std::vector<RequestPtr> reqs;
    for (size_t k = 0; k < msgs.size(); ++k) reqs.push_back(std::make_unique<NcclRequest>(stream_, stats_));
    return reqs;
  }
  void barrier() override {
    count(0);
    float* dummy = nullptr;
    cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&dummy), sizeof(float), stream_), "cudaMallocAsync");
    nccl_check(ncclAllReduce(dummy, dummy, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce(barrier)");
    cuda_check(cudaFreeAsync(dummy, stream_), "cudaFreeAsync");
    sync();
  }
  void set_allreduce_algo(AllreduceAlgo a) override { algo_ = a; }  // NCCL picks its own algorithm
  AllreduceAlgo allreduce_algo() const override { return algo_; }

 private:
  // Called first by every op: counts it and makes this communicator's stream wait for the work enqueued so far on
  // the compute stream (the kernel or GEMM that wrote the buffer). With the legacy default stream (nullptr) the
  // event is recorded there, which orders after every blocking stream as well.
  void count(size_t bytes) {
    stats_.bytes += double(bytes);
    stats_.calls += 1;
    cuda_check(cudaEventRecord(computed_, compute_), "cudaEventRecord(compute stream)");
    cuda_check(cudaStreamWaitEvent(stream_, computed_, 0), "cudaStreamWaitEvent");
  }
  void sync() {
    const double t0 = MPI_Wtime();
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    stats_.blocked_seconds += MPI_Wtime() - t0;
  }

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = nullptr;    // not owned: Kokkos' stream
  cudaEvent_t computed_ = nullptr;    // recorded on compute_ before each op
  AllreduceAlgo algo_ = AllreduceAlgo::Library;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm(MPI_Comm comm, void* compute_stream) {
  return std::make_unique<NcclComm>(comm, static_cast<cudaStream_t>(compute_stream));
}

int nccl_version() {
  int v = 0;
  nccl_check(ncclGetVersion(&v), "ncclGetVersion");
  return v;
}

}  // namespace gt
