#pragma once
// The process grid: the one owner of rank placement and of the sub-communicators.
//
// World rank r of a (tp, pp, dp) grid has coordinates
//   tp_rank = r % tp,  dp_rank = (r / tp) % dp,  pp_rank = r / (tp * dp)
// i.e. tp fastest, then dp, then pp, so that a TP group is a block of consecutive ranks (inside one node).
// See docs/grid.md for a worked example with 8 ranks.
#include <mpi.h>

#include <memory>

#include "src/comm/comm.hpp"

namespace gt {

struct GridShape {
  int tp = 1, pp = 1, dp = 1;
  int size() const { return tp * pp * dp; }
};

class Grid {
 public:
  // dp == 0 means world_size / (tp * pp). Throws gt::Error (same message on every rank) if the shape does
  // not fit the world. With CommBackend::Nccl the TP, PP, DP and embedding groups get one NCCL communicator
  // each (unique id made on the group's rank 0, broadcast over the group's MPI communicator); world and the
  // model-parallel group, which reduce host scalars, stay on MPI.
  Grid(MPI_Comm world, int tp, int pp, int dp, AllreduceAlgo algo, CommBackend backend = CommBackend::Mpi);
  ~Grid();
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;

  const GridShape& shape() const { return shape_; }
  CommBackend backend() const { return backend_; }
  int world_rank() const { return world_rank_; }
  int world_size() const { return shape_.size(); }
  int tp_rank() const { return tp_rank_; }
  int pp_rank() const { return pp_rank_; }
  int dp_rank() const { return dp_rank_; }
  bool first_stage() const { return pp_rank_ == 0; }
  bool last_stage() const { return pp_rank_ == shape_.pp - 1; }
  int rank_of(int tp_rank, int pp_rank, int dp_rank) const {
    return tp_rank + shape_.tp * (dp_rank + shape_.dp * pp_rank);
  }

  Comm& world() { return *world_; }
  Comm& tp() { return *tp_; }  // ranks with the same (pp, dp)
  Comm& pp() { return *pp_; }  // ranks with the same (tp, dp); rank in it = pp_rank
  Comm& dp() { return *dp_; }  // ranks with the same (tp, pp); rank in it = dp_rank
  Comm& mp() { return *mp_; }  // model-parallel group: ranks with the same dp (tp x pp), for norms
  // First and last stage of one (tp, dp) pipeline, which both hold the tied token embedding. Null when
  // pp == 1 or this rank is on a middle stage.
  Comm* embed() { return embed_.get(); }

  MPI_Comm world_mpi() const { return world_comm_; }
  MPI_Comm dp_mpi() const { return dp_comm_; }

 private:
  GridShape shape_;
  CommBackend backend_ = CommBackend::Mpi;
  int world_rank_ = 0, tp_rank_ = 0, pp_rank_ = 0, dp_rank_ = 0;
  MPI_Comm world_comm_ = MPI_COMM_NULL, tp_comm_ = MPI_COMM_NULL, pp_comm_ = MPI_COMM_NULL,
           dp_comm_ = MPI_COMM_NULL, mp_comm_ = MPI_COMM_NULL, embed_comm_ = MPI_COMM_NULL;
  std::unique_ptr<Comm> world_, tp_, pp_, dp_, mp_, embed_;
};

}  // namespace gt
