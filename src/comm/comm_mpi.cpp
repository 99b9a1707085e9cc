// MPI backend of gt::Comm. Every blocking call, test() and wait() adds its wall time to stats().
// Float/double sum all-reduce dispatches on the algorithm; everything else is the MPI library.
//
// The algorithms run on a private duplicate of the caller's communicator, so their messages can never match
// the caller's own send/recv. Each ring all-reduce (blocking or not) gets its own tag from a counter that
// advances identically on every rank, so several can be in flight at once (gradient buckets). Shm
// operations share one segment, so they run strictly in issue order: a non-blocking Shm all-reduce is
// queued and executed, together with every one queued before it, by the first test() or wait() on it or by
// the next blocking Shm all-reduce (test() therefore blocks for Shm).
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>  // MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

#include <climits>
#include <deque>

#include "src/comm/comm.hpp"
#include "src/comm/half_sum.hpp"
#include "src/comm/watchdog.hpp"
#include "src/comm/ring_allreduce.hpp"
#include "src/comm/shm_allreduce.hpp"
#include "src/core/error.hpp"

namespace gt {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::BF16: return 2;
    case DType::F16: return 2;
  }
  return 1;
}

AllreduceAlgo parse_allreduce_algo(const std::string& name) {
  if (name == "mpi") return AllreduceAlgo::Library;
  if (name == "ring") return AllreduceAlgo::Ring;
  if (name == "shm") return AllreduceAlgo::Shm;
  if (name == "auto") return AllreduceAlgo::Auto;
  throw Error("unknown all-reduce algorithm '" + name + "' (expected \"auto\", \"mpi\", \"ring\" or \"shm\")");
}

CommBackend resolve_comm_backend(const std::string& name, bool device_is_cuda, bool mpi_cuda_aware,
                                 bool ranks_share_device) {
  if (name != "mpi" && name != "auto" && name != "nccl")
    throw Error("config key 'parallel.comm' must be \"auto\", \"mpi\" or \"nccl\", got \"" + name + "\"");
  if (name == "auto" && nccl_compiled() && device_is_cuda && !ranks_share_device) return CommBackend::Nccl;
  if (name == "mpi" || name == "auto") {
    if (device_is_cuda && !mpi_cuda_aware) return CommBackend::MpiStaged;
    return CommBackend::Mpi;
  }
  if (!nccl_compiled())
    throw Error("parallel.comm=nccl: this build has no NCCL backend (configure with -DGRIDTRAIN_ENABLE_NCCL=ON)");
  if (!device_is_cuda)
    throw Error("parallel.comm=nccl: this build keeps tensors in host memory (Kokkos without CUDA); NCCL needs "
                "device buffers");
  if (ranks_share_device)
    throw Error("parallel.comm=nccl: more ranks than GPUs on a node, and NCCL needs a GPU per rank; use "
                "parallel.comm=mpi (host-staged) or auto, or one rank per GPU");
  return CommBackend::Nccl;
}

bool ranks_share_device(MPI_Comm world, int devices) {
  MPI_Comm local;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_size = 1;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  int mine = local_size > devices, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, world);  // every rank takes the same backend
  return any != 0;
}

const char* comm_backend_name(CommBackend b) {
  return b == CommBackend::Nccl ? "nccl" : b == CommBackend::MpiStaged ? "mpi-staged" : "mpi";
}

bool mpi_reports_cuda_support() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) || defined(MPIX_GPU_SUPPORT_CUDA)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

AllreduceAlgo device_allreduce_algo(AllreduceAlgo requested, CommBackend backend, bool device_is_cuda) {
  if (!device_is_cuda || backend != CommBackend::Mpi) return requested;  // host memory or host copies: any
  if (requested == AllreduceAlgo::Ring || requested == AllreduceAlgo::Shm)
    throw Error("parallel.allreduce=" + std::string(requested == AllreduceAlgo::Ring ? "ring" : "shm") +
                " adds on the host; with GPU memory over MPI use parallel.allreduce=mpi or auto");
  return AllreduceAlgo::Library;
}

bool nccl_compiled() {
#if defined(GRIDTRAIN_HAVE_NCCL)
  return true;
#else
  return false;
#endif
}

namespace {

// Collective: whether every rank of c shares one node (so a shared-memory segment reaches them all).
bool one_node(MPI_Comm c) {
  int size = 1, local_size = 1;
  MPI_Comm_size(c, &size);
  MPI_Comm local;
  MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  int mine = local_size == size, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, c);
  return all != 0;
}

// Auto made concrete for communicator c (collective when algo is Auto).
AllreduceAlgo resolved(AllreduceAlgo algo, MPI_Comm c) {
  if (algo != AllreduceAlgo::Auto) return algo;
  return one_node(c) ? AllreduceAlgo::Shm : AllreduceAlgo::Library;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::BF16: return MPI_UINT16_T;  // the bits; half_sum_op adds them as numbers
    case DType::F16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::BF16 || t == DType::F16) {
    if (op != ReduceOp::Sum) throw Error("comm: only sums are implemented for 16-bit floats");
    return half_sum_op(t == DType::BF16);
  }
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

// MPI counts are int: the library paths refuse what they cannot express (ring and shm take any size).
int mpi_count(size_t n, const char* what) {
  if (n > size_t(INT_MAX))
    throw Error(std::string("comm: ") + what + " of " + std::to_string(n) + " elements exceeds the MPI count limit");
  return int(n);
}

bool float_sum(DType t, ReduceOp op) { return op == ReduceOp::Sum && (t == DType::F32 || t == DType::F64); }

// Adds the wall time of its scope to blocked_seconds; counts an operation (bytes, calls) when asked.
// The name Grid gave the communicator (MPI_Comm_set_name) and the world ranks of its members.
watchdog::Group watch_group_of(MPI_Comm c, int size) {
  watchdog::Group g;
  char name[MPI_MAX_OBJECT_NAME] = {0};
  int len = 0;
  MPI_Comm_get_name(c, name, &len);
  g.name = len > 0 ? std::string(name, size_t(len)) : "unnamed";
  MPI_Group world, mine;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Comm_group(c, &mine);
  std::vector<int> ranks(size_t(size), 0);
  for (int r = 0; r < size; ++r) ranks[size_t(r)] = r;
  g.world_ranks.assign(size_t(size), 0);
  MPI_Group_translate_ranks(mine, size, ranks.data(), world, g.world_ranks.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  return g;
}

// The scope is what the watchdog (src/comm/watchdog.hpp) watches: operation `what` on `group`.
class Timer {
 public:
  Timer(CommStats& s, const char* what, const watchdog::Group* group) : s_(s), t0_(MPI_Wtime()) {
    watchdog::enter(what, group);
  }
  Timer(CommStats& s, double bytes, const char* what, const watchdog::Group* group) : Timer(s, what, group) {
    s_.bytes += bytes;
    s_.calls += 1;
  }
  ~Timer() {
    s_.blocked_seconds += MPI_Wtime() - t0_;
    watchdog::leave();
  }

 private:
  CommStats& s_;
  double t0_;
};

class MpiRequest : public Request {
 public:
  // keep: what MPI reads until completion (the counts of a v-collective)
  MpiRequest(MPI_Request r, CommStats& s, const char* what, const watchdog::Group* g,
             std::unique_ptr<std::vector<int>> keep = nullptr)
      : req_(r), stats_(s), what_(what), group_(g), keep_(std::move(keep)) {}
  ~MpiRequest() override {
    if (req_ != MPI_REQUEST_NULL && !unwinding()) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    Timer t(stats_, what_, group_);
    int flag = 1;
    if (req_ != MPI_REQUEST_NULL) MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  void wait() override {
    Timer t(stats_, what_, group_);
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }

 private:
  MPI_Request req_;
  CommStats& stats_;
  const char* what_;
  const watchdog::Group* group_;
  std::unique_ptr<std::vector<int>> keep_;
};

template <class T>
class RingRequest : public Request {
 public:
  RingRequest(std::unique_ptr<RingAllreduce<T>> ring, CommStats& s, const watchdog::Group* g)
      : ring_(std::move(ring)), stats_(s), group_(g) {}
  bool test() override {
    Timer t(stats_, "iallreduce (ring)", group_);
    return ring_->progress(false);
  }
  void wait() override {
    Timer t(stats_, "iallreduce (ring)", group_);
    ring_->progress(true);
  }

 private:
  std::unique_ptr<RingAllreduce<T>> ring_;  // its destructor completes an unfinished ring
  CommStats& stats_;
  const watchdog::Group* group_;
};

// A queued Shm all-reduce; `done` flips when the queue has run it.
struct ShmJob {
  void* buf;
  size_t n;
  DType t;
  bool done = false;
};

class MpiComm;

class ShmRequest : public Request {
 public:
  ShmRequest(std::shared_ptr<ShmJob> job, MpiComm& owner, CommStats& s) : job_(std::move(job)), owner_(owner), stats_(s) {}
  ~ShmRequest() override;
  bool test() override;
  void wait() override { test(); }

 private:
  std::shared_ptr<ShmJob> job_;
  MpiComm& owner_;
  CommStats& stats_;
};

class MpiComm : public Comm {
 public:
  MpiComm(MPI_Comm c, AllreduceAlgo algo) : comm_(c), algo_(algo) {
    MPI_Comm_rank(c, &rank_);
    MPI_Comm_size(c, &size_);
    group_ = watch_group_of(c, size_);
    MPI_Comm_dup(c, &algo_comm_);
    algo_ = resolved(algo, c);
  }
  ~MpiComm() override {
    if (unwinding()) {  // queued jobs and the communicator are dropped, not drained (comm.hpp)
      shm_queue_.clear();
      shm_.reset();
      return;
    }
    run_shm_queue(nullptr);
    shm_.reset();
    MPI_Comm_free(&algo_comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  const watchdog::Group* watch_group() const override { return &group_; }

  void allreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    Timer tm(stats_, double(n) * dtype_size(t), "allreduce", &group_);
    if (size_ == 1 || n == 0) return;
    if (float_sum(t, op) && algo_ == AllreduceAlgo::Ring) {
      if (t == DType::F32) RingAllreduce<float>(algo_comm_, static_cast<float*>(buf), n, next_tag()).progress(true);
      else RingAllreduce<double>(algo_comm_, static_cast<double*>(buf), n, next_tag()).progress(true);
      return;
    }
    if (float_sum(t, op) && algo_ == AllreduceAlgo::Shm) {
      run_shm_queue(nullptr);
      run_shm(buf, n, t);
      return;
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, mpi_count(n, "allreduce"), mpi_type(t), mpi_op(op, t), comm_);
  }
  RequestPtr iallreduce(void* buf, size_t n, DType t, ReduceOp op) override {
    stats_.bytes += double(n) * dtype_size(t);
    stats_.calls += 1;
    if (size_ > 1 && n > 0 && float_sum(t, op) && algo_ == AllreduceAlgo::Ring) {
      if (t == DType::F32)
        return std::make_unique<RingRequest<float>>(
            std::make_unique<RingAllreduce<float>>(algo_comm_, static_cast<float*>(buf), n, next_tag()), stats_, &group_);
      return std::make_unique<RingRequest<double>>(
          std::make_unique<RingAllreduce<double>>(algo_comm_, static_cast<double*>(buf), n, next_tag()), stats_, &group_);
    }
    if (size_ > 1 && n > 0 && float_sum(t, op) && algo_ == AllreduceAlgo::Shm) {
      auto job = std::make_shared<ShmJob>(ShmJob{buf, n, t});
      shm_queue_.push_back(job);
      return std::make_unique<ShmRequest>(job, *this, stats_);
    }
    MPI_Request r = MPI_REQUEST_NULL;
    if (size_ > 1 && n > 0)
      MPI_Iallreduce(MPI_IN_PLACE, buf, mpi_count(n, "iallreduce"), mpi_type(t), mpi_op(op, t), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_, "iallreduce", &group_);
  }
  void reduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    Timer tm(stats_, double(rc) * size_ * dtype_size(t), "reduce_scatter", &group_);
    MPI_Reduce_scatter_block(send, recv, mpi_count(rc, "reduce_scatter"), mpi_type(t), mpi_op(op, t), comm_);
  }
  void allgather(const void* send, void* recv, size_t sc, DType t) override {
    Timer tm(stats_, double(sc) * size_ * dtype_size(t), "allgather", &group_);
    const int c = mpi_count(sc, "allgather");
    MPI_Allgather(in_place(send, recv, sc, t), c, mpi_type(t), recv, c, mpi_type(t), comm_);
  }
  // The reduce-scatter and all-gather families are the MPI library's for every AllreduceAlgo: the ring and shm
  // algorithms here are all-reduces only (a ring reduce-scatter is the first half of one: later work).
  RequestPtr ireduce_scatter(const void* send, void* recv, size_t rc, DType t, ReduceOp op) override {
    stats_.bytes += double(rc) * size_ * dtype_size(t);
    stats_.calls += 1;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Ireduce_scatter_block(send, recv, mpi_count(rc, "ireduce_scatter"), mpi_type(t), mpi_op(op, t), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_, "ireduce_scatter", &group_);
  }
  RequestPtr iallgather(const void* send, void* recv, size_t sc, DType t) override {
    stats_.bytes += double(sc) * size_ * dtype_size(t);
    stats_.calls += 1;
    const int c = mpi_count(sc, "iallgather");
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Iallgather(in_place(send, recv, sc, t), c, mpi_type(t), recv, c, mpi_type(t), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_, "iallgather", &group_);
  }
  RequestPtr ireduce_scatter_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t,
                               ReduceOp op) override {
    if (int(counts.size()) != size_)
      throw Error("comm: reduce_scatter_v got " + std::to_string(counts.size()) + " counts for " +
                  std::to_string(size_) + " ranks");
    auto c = std::make_unique<std::vector<int>>(size_);  // MPI reads the counts until completion
    size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      (*c)[r] = mpi_count(counts[r], "ireduce_scatter_v");
      total += counts[r];
    }
    stats_.bytes += double(total) * dtype_size(t);
    stats_.calls += 1;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Ireduce_scatter(send, recv, c->data(), mpi_type(t), mpi_op(op, t), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_, "ireduce_scatter_v", &group_, std::move(c));
  }
  RequestPtr iallgather_v(const void* send, void* recv, const std::vector<size_t>& counts, DType t) override {
    if (int(counts.size()) != size_)
      throw Error("comm: allgather_v got " + std::to_string(counts.size()) + " counts for " + std::to_string(size_) +
                  " ranks");
    auto c = std::make_unique<std::vector<int>>(2 * size_);  // counts, then displacements: read until completion
    size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      (*c)[r] = mpi_count(counts[r], "iallgather_v");
      (*c)[size_ + r] = mpi_count(total, "iallgather_v");
      total += counts[r];
    }
    stats_.bytes += double(total) * dtype_size(t);
    stats_.calls += 1;
    const char* own = static_cast<const char*>(recv) + size_t((*c)[size_ + rank_]) * dtype_size(t);
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Iallgatherv(send == own ? MPI_IN_PLACE : send, (*c)[rank_], mpi_type(t), recv, c->data(), c->data() + size_,
                    mpi_type(t), comm_, &r);
    return std::make_unique<MpiRequest>(r, stats_, "iallgather_v", &group_, std::move(c));
  }
  void broadcast(void* buf, size_t n, DType t, int root) override {
    Timer tm(stats_, double(n) * dtype_size(t), "broadcast", &group_);
    check_peer(root, "broadcast root");
    MPI_Bcast(buf, mpi_count(n, "broadcast"), mpi_type(t), root, comm_);
  }
  void send(const void* buf, size_t n, DType t, int peer, int tag) override {
    Timer tm(stats_, double(n) * dtype_size(t), "send", &group_);
    check_peer(peer, "send peer");
    MPI_Send(buf, mpi_count(n, "send"), mpi_type(t), peer, tag, comm_);
  }
  void recv(void* buf, size_t n, DType t, int peer, int tag) override {
    Timer tm(stats_, double(n) * dtype_size(t), "recv", &group_);
    check_peer(peer, "recv peer");
    MPI_Recv(buf, mpi_count(n, "recv"), mpi_type(t), peer, tag, comm_, MPI_STATUS_IGNORE);
  }
  RequestPtr isend(const void* buf, size_t n, DType t, int peer, int tag) override {
    return start_p2p(n, t, peer, "isend", "isend peer", [&](int count, MPI_Datatype type, MPI_Request* r) {
      MPI_Isend(buf, count, type, peer, tag, comm_, r);
    });
  }
  RequestPtr irecv(void* buf, size_t n, DType t, int peer, int tag) override {
    return start_p2p(n, t, peer, "irecv", "irecv peer", [&](int count, MPI_Datatype type, MPI_Request* r) {
      MPI_Irecv(buf, count, type, peer, tag, comm_, r);
    });
  }
  void barrier() override {
    Timer tm(stats_, 0, "barrier", &group_);
    MPI_Barrier(comm_);
  }
  void* alloc_registered(size_t bytes) override {
    if (size_ == 1 || algo_ != AllreduceAlgo::Shm) return nullptr;
    run_shm_queue(nullptr);
    if (!shm_) shm_ = std::make_unique<ShmAllreduce>(algo_comm_);  // collective
    return shm_->register_region(bytes);
  }
  void* registered_peer(int k) override { return shm_ ? shm_->region(k) : nullptr; }
  void set_allreduce_algo(AllreduceAlgo a) override {
    run_shm_queue(nullptr);  // queued Shm jobs keep their algorithm
    algo_ = resolved(a, comm_);
  }
  AllreduceAlgo allreduce_algo() const override { return algo_; }

  // Runs queued Shm jobs in issue order, up to and including `until` (all of them when null).
  void run_shm_queue(const ShmJob* until) {
    while (!shm_queue_.empty()) {
      std::shared_ptr<ShmJob> job = shm_queue_.front();
      shm_queue_.pop_front();
      run_shm(job->buf, job->n, job->t);
      job->done = true;
      if (job.get() == until) return;
    }
  }

 private:
  void run_shm(void* buf, size_t n, DType t) {
    if (!shm_) shm_ = std::make_unique<ShmAllreduce>(algo_comm_);  // collective: first Shm use, every rank
    if (t == DType::F32) shm_->sum(static_cast<float*>(buf), n);
    else shm_->sum(static_cast<double*>(buf), n);
  }
  int next_tag() { return 2 + 2 * int(ring_ops_++ % 8192); }  // a ring uses tag, tag+1; MPI_TAG_UB >= 32767
  // MPI forbids aliased send/recv buffers: a send that is the rank's own block of recv means MPI_IN_PLACE.
  const void* in_place(const void* send, const void* recv, size_t sc, DType t) const {
    const char* own = static_cast<const char*>(recv) + size_t(rank_) * sc * dtype_size(t);
    return send == own ? MPI_IN_PLACE : send;
  }
  // isend and irecv: the call counted, the peer checked, then post(count, type, &request) starts it (what: its
  // name in errors and the watchdog's report).
  template <class Post>
  RequestPtr start_p2p(size_t n, DType t, int peer, const char* what, const char* peer_what, Post&& post) {
    stats_.bytes += double(n) * dtype_size(t);
    stats_.calls += 1;
    check_peer(peer, peer_what);
    MPI_Request r;
    post(mpi_count(n, what), mpi_type(t), &r);
    return std::make_unique<MpiRequest>(r, stats_, what, &group_);
  }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size_)
      throw Error(std::string("comm: ") + what + " " + std::to_string(peer) + " is outside the group of " +
                  std::to_string(size_) + " ranks");
  }

  MPI_Comm comm_;
  MPI_Comm algo_comm_ = MPI_COMM_NULL;
  AllreduceAlgo algo_;
  int rank_ = 0, size_ = 1;
  watchdog::Group group_;  // the communicator's name and members, for the watchdog's report
  unsigned long ring_ops_ = 0;
  std::unique_ptr<ShmAllreduce> shm_;
  std::deque<std::shared_ptr<ShmJob>> shm_queue_;
};

ShmRequest::~ShmRequest() {
  if (!job_->done && !unwinding()) owner_.run_shm_queue(job_.get());
}

bool ShmRequest::test() {
  Timer t(stats_, "iallreduce (shm)", owner_.watch_group());
  if (!job_->done) owner_.run_shm_queue(job_.get());
  return true;
}

}  // namespace

std::unique_ptr<Comm> make_mpi_comm(MPI_Comm comm, AllreduceAlgo algo) { return std::make_unique<MpiComm>(comm, algo); }

}  // namespace gt
