#include "src/train/dp/topk_residuals.hpp"

#include <cstdio>
#include <string>

namespace gt {

TopkResiduals::TopkResiduals(TrainState& state) : state_(state) { state.add_buffer(Buffer::EfResidual, DType::F32); }

std::vector<TensorShard> TopkResiduals::datasets(ExtensionIo& io) {
  double n = double(state_.layout().size()), n_max = n;
  io.grid.world().allreduce(&n_max, 1, DType::F64, ReduceOp::Max);
  TensorShard t;
  t.name = disk_name(Buffer::EfResidual);
  t.global_shape = {io.grid.world_size(), int64_t(n_max)};
  t.start = {io.grid.world_rank(), 0};
  t.count = {1, int64_t(n)};
  t.data = io.host(Buffer::EfResidual);
  t.writer = true;
  return {t};
}

void TopkResiduals::save_meta(CheckpointMeta& meta) const { meta.ints[disk_name(Buffer::EfResidual)] = 1; }

bool TopkResiduals::restores_from(ExtensionIo& io, const CheckpointMeta& saved) {
  CheckpointMeta meta = saved;  // operator[] below: absent grid entries read as 0, as before
  const GridShape& g = io.grid.shape();
  const bool has = meta.ints.count(disk_name(Buffer::EfResidual)) > 0;
  const bool same = meta.ints["grid.tp"] == g.tp && meta.ints["grid.pp"] == g.pp && meta.ints["grid.dp"] == g.dp;
  if (has && same) return true;  // the same ranks hold the same residuals: the run continues bit for bit
  if (io.grid.world_rank() == 0)
    std::fprintf(stderr, "gridtrain: warning: %s; the error-feedback residuals start at zero, so the run is no "
                 "longer the same as the uninterrupted one\n",
                 has ? ("the checkpoint was written on tp=" + std::to_string(meta.ints["grid.tp"]) + " pp=" +
                        std::to_string(meta.ints["grid.pp"]) + " dp=" + std::to_string(meta.ints["grid.dp"]) +
                        " and residuals are per rank of that layout").c_str()
                     : "the checkpoint holds no error-feedback residuals (written without compress.method = topk)");
  return false;
}

}  // namespace gt
