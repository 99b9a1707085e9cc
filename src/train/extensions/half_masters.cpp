#include "src/train/extensions/half_masters.hpp"

#include "src/core/error.hpp"

namespace gt {

HalfMasters::HalfMasters(TrainState& state, const ZeroPlan& zero, Comm& dp) : state_(state), zero_(zero), dp_(dp) {
  if (state_.working() == Precision::FP32 || !state_.has_buffer(Buffer::Master))
    throw Error("16-bit masters: the state's working type is fp32 (its parameters are the masters)");
}

void HalfMasters::after_update(int) { state_.refresh_params(zero_.shard); }

void HalfMasters::on_resume() {
  state_.refresh_params(zero_.shard);
  allgather_params(state_, zero_, dp_);  // ZeRO 1, 2: every rank's rounded shard to every rank
}

}  // namespace gt
