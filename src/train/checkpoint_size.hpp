#pragma once
// The shape of this run's checkpoint file as the start-up check sizes it (src/io/checkpoint_space.hpp), before
// any state exists: the same datasets the Checkpointer writes, so the check at start and the reservation at
// every save ask for the same room.
#include "src/core/config.hpp"
#include "src/io/checkpoint_space.hpp"

namespace gt {

// params/adam_m/adam_v of every model tensor in its global shape; the 2:4 masks of the masked tensors under
// sparsity.pattern = 2:4; under compress.method = topk the error-feedback residuals, one row per rank (a row
// is bounded by the whole model: exact at tp = pp = 1, an over-estimate otherwise). Attributes: the config text
// and 4 KiB for the other root attributes.
io::CheckpointFileShape checkpoint_file_shape(const Config& cfg, int world_size);

}  // namespace gt
