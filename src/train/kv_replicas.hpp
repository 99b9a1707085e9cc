#pragma once
// Replicated key/value heads (llama with parallel.tp > model.n_kv_head, docs/model.md "Llama"): a checkpoint holds
// each key/value head once, written and read by the last of the TP ranks that share it (its query rows and the
// key/value rows that follow them are one hyperslab of the global qkv weight); the others read their query rows
// only. After a load this copies the last replica's key/value rows to the others, so that replicas never differ.
#include <string>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/train/train_state.hpp"

namespace gt {

// The element range of a tensor that this rank reads and writes in a checkpoint: all of it, except the key/value
// rows on a replica that is not the last one (then the same as owned_range).
Range checkpoint_range(const TensorSpec& s);

// Collective over the TP group `tp`. For each fp32 buffer named, the key/value rows of every replicated tensor
// (within the extent the buffer holds) from the last replica to the others.
void copy_kv_from_last_replica(TrainState& state, const std::vector<Buffer>& buffers, Comm& tp);

}  // namespace gt
