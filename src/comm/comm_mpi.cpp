// MPI backend of gt::Comm. Every blocking call, test() and wait() adds its wall time to stats().
#include <mpi.h>

#include "src/comm/comm.hpp"
#include "src/core/error.hpp"

namespace gt {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 1;
}

AllreduceAlgo parse_allreduce_algo(const std::string& name) {
  if (name == "mpi") return AllreduceAlgo::Library;
  if (name == "ring") return AllreduceAlgo::Ring;
  if (name == "shm") return AllreduceAlgo::Shm;
  throw Error("unknown all-reduce algorithm '" + name + "' (expected \"mpi\", \"ring\" or \"shm\")");
}

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::U8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

class Timer {
 public:
  Timer(CommStats& s, double bytes) : s_(s), t0_(MPI_Wtime()) {
    s_.bytes += bytes;
    s_.calls += 1;
  }
  ~Timer() { s_.blocked_seconds += MPI_Wtime() - t0_; }

 private:
  CommStats& s_;
  double t0_;
};

class MpiRequest : public Request {
 public:
  MpiRequest(MPI_Request r, CommStats& s) : req_(r), stats_(s) {}
  ~MpiRequest() override {
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    Timer t(stats_, 0);
    int flag = 1;
    if (req_ != MPI_REQUEST_NULL) MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  void wait() override {
    Timer t(stats_, 0);
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }

 private:
  MPI_Request req_;
  CommStats& stats_;
};

class MpiComm : public Comm {
 public:
  MpiComm(MPI_Comm c, AllreduceAlgo algo) : comm_(c), algo_(algo) {
    MPI_Comm_rank(c, &rank_);
    MPI_Comm_size(c, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    Timer tm(stats_, double(n) * dtype_size(t));
    if (size_ == 1 || n == 0) return;
    if (op == ReduceOp::Sum && algo_ == AllreduceAlgo::Ring && (t == DType::F32 || t == DType::F64)) {
      if (t == DType::F32) ring_allreduce_sum(comm_, static_cast<float*>(buf), n);
      else ring_allreduce_sum(comm_, static_cast<double*>(buf), n);
      return;
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, int(n), mpi_type(t), mpi_op(op), comm_);
  }
  RequestPtr iallreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    stats_.bytes += double(n) * dtype_size(t);
    MPI_Request r = MPI_REQUEST_NULL;
    if (size_ > 1 && n > 0) MPI_Iallreduce(MPI_IN_PLACE, buf, int(n), mpi_type(t), mpi_op(op), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_);
  }
  void reduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    Timer tm(stats_, double(rc) * size_ * dtype_size(t));
    MPI_Reduce_scatter_block(send, recv, int(rc), mpi_type(t), mpi_op(op), comm_);
  }
  void allgather(const void* send, void* recv, size_t sc, DType t) override {
    Timer tm(stats_, double(sc) * size_ * dtype_size(t));
    MPI_Allgather(send, int(sc), mpi_type(t), recv, int(sc), mpi_type(t), comm_);
  }
  void broadcast(void* buf, size_t n, DType t, int root) override {
    Timer tm(stats_, double(n) * dtype_size(t));
    MPI_Bcast(buf, int(n), mpi_type(t), root, comm_);
  }
  void send(const void* buf, size_t n, DType t, int peer, int tag) override {
    Timer tm(stats_, double(n) * dtype_size(t));
    MPI_Send(buf, int(n), mpi_type(t), peer, tag, comm_);
  }
  void recv(void* buf, size_t n, DType t, int peer, int tag) override {
    Timer tm(stats_, double(n) * dtype_size(t));
    MPI_Recv(buf, int(n), mpi_type(t), peer, tag, comm_, MPI_STATUS_IGNORE);
  }
  RequestPtr isend(const void* buf, size_t n, DType t, int peer, int tag) override {
    stats_.bytes += double(n) * dtype_size(t);
    MPI_Request r;
    MPI_Isend(buf, int(n), mpi_type(t), peer, tag, comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_);
  }
  RequestPtr irecv(void* buf, size_t n, DType t, int peer, int tag) override {
    MPI_Request r;
    MPI_Irecv(buf, int(n), mpi_type(t), peer, tag, comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_);
  }
  void barrier() override {
    Timer tm(stats_, 0);
    MPI_Barrier(comm_);
  }
  void set_allreduce_algo(AllreduceAlgo a) override { algo_ = a; }
  AllreduceAlgo allreduce_algo() const override { return algo_; }

 private:
  MPI_Comm comm_;
  AllreduceAlgo algo_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm(MPI_Comm comm, AllreduceAlgo algo) { return std::make_unique<MpiComm>(comm, algo); }

}  // namespace gt
