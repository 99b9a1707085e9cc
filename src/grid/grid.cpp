#include "src/grid/grid.hpp"

#include <string>

#include "kernels/device_stream.hpp"
#include "src/comm/comm_staged.hpp"
#include "src/core/error.hpp"

namespace gt {

Grid::Grid(MPI_Comm world, int tp, int pp, int dp, AllreduceAlgo algo, CommBackend backend) : backend_(backend) {
  // Plain MPI cannot carry device buffers unless the library reads GPU memory: stage them through the host (the
  // in-process tests build their grids with the default backend on GPU builds too).
  if (backend_ == CommBackend::Mpi && kernels_on_device() && !mpi_reports_cuda_support())
    backend_ = CommBackend::MpiStaged;
  int world_size = 0;
  MPI_Comm_size(world, &world_size);
  MPI_Comm_rank(world, &world_rank_);
  if (tp <= 0 || pp <= 0 || dp < 0) throw Error("grid: tp and pp must be positive and dp >= 0");
  if (dp == 0) {
    if (world_size % (tp * pp) != 0)
      throw Error("grid tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + " does not divide the world size " +
                  std::to_string(world_size));
    dp = world_size / (tp * pp);
  }
  shape_ = GridShape{tp, pp, dp};
  if (shape_.size() != world_size)
    throw Error("grid tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + " dp=" + std::to_string(dp) +
                " needs " + std::to_string(shape_.size()) + " ranks but the world has " + std::to_string(world_size));

  tp_rank_ = world_rank_ % tp;
  dp_rank_ = (world_rank_ / tp) % dp;
  pp_rank_ = world_rank_ / (tp * dp);

  MPI_Comm_dup(world, &world_comm_);
  // Colour = the coordinates that stay fixed inside the group; key = the coordinate that varies.
  MPI_Comm_split(world_comm_, pp_rank_ * dp + dp_rank_, tp_rank_, &tp_comm_);
  MPI_Comm_split(world_comm_, dp_rank_ * tp + tp_rank_, pp_rank_, &pp_comm_);
  MPI_Comm_split(world_comm_, pp_rank_ * tp + tp_rank_, dp_rank_, &dp_comm_);
  MPI_Comm_split(world_comm_, dp_rank_, pp_rank_ * tp + tp_rank_, &mp_comm_);
  const bool in_embed = pp > 1 && (first_stage() || last_stage());
  MPI_Comm_split(world_comm_, in_embed ? dp_rank_ * tp + tp_rank_ : MPI_UNDEFINED, pp_rank_, &embed_comm_);
  // Names for reports (the communication watchdog names the group a rank waits in).
  const std::pair<MPI_Comm, const char*> names[] = {{world_comm_, "world"}, {tp_comm_, "tp"}, {pp_comm_, "pp"},
      {dp_comm_, "dp"}, {mp_comm_, "model-parallel"}, {embed_comm_, "embedding"}};
  for (const auto& [c, name] : names)
    if (c != MPI_COMM_NULL) MPI_Comm_set_name(c, name);

  // Device-buffer groups on the chosen backend; every rank creates them in the same order (NCCL's
  // initialisation is collective over each group).
  std::shared_ptr<HostStaging> staging;
  if (backend_ == CommBackend::MpiStaged) {  // host copies (memcpy) where the tensors live on the host (a test)
#if defined(GRIDTRAIN_HAVE_CUDA_STAGING)
    if (kernels_on_device()) staging = make_cuda_staging(device_stream());
#endif
    if (!staging) staging = make_host_staging();
  }
  auto device_group = [&](MPI_Comm c) -> std::unique_ptr<Comm> {
#if defined(GRIDTRAIN_HAVE_NCCL)
    if (backend_ == CommBackend::Nccl) return make_nccl_comm(c, device_stream());
#endif
    if (backend_ == CommBackend::Nccl) throw Error("grid: NCCL requested but this build has no NCCL backend");
    if (backend_ == CommBackend::MpiStaged) return make_staged_comm(make_mpi_comm(c, algo), staging);
    return make_mpi_comm(c, algo);
  };
  world_ = make_mpi_comm(world_comm_, algo);
  mp_ = make_mpi_comm(mp_comm_, algo);
  tp_ = device_group(tp_comm_);
  pp_ = device_group(pp_comm_);
  dp_ = device_group(dp_comm_);
  if (embed_comm_ != MPI_COMM_NULL) embed_ = device_group(embed_comm_);
}

Grid::~Grid() {
  world_.reset(); tp_.reset(); pp_.reset(); dp_.reset(); mp_.reset(); embed_.reset();
  if (unwinding()) return;  // communicators are left to MPI_Finalize or MPI_Abort (comm.hpp)
  for (MPI_Comm* c : {&tp_comm_, &pp_comm_, &dp_comm_, &mp_comm_, &embed_comm_, &world_comm_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

}  // namespace gt
