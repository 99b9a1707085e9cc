#pragma once
// Memory pre-check (docs/reliability.md case 6): before the trainer allocates anything, the planner's ledger of
// this rank (model states by ZeRO stage and precision, activations of the micro-batches in flight, work buffers:
// src/plan/memory.hpp) is compared with what the machine can give: the sum over the ranks of this node against
// MemAvailable, and this rank's share plus what it has mapped already against its address-space limit
// (RLIMIT_AS, `ulimit -v`); on GPU builds this rank's share against its device's free memory instead. A layout that cannot fit is a one-line gt::Error with the predicted bytes and the keys
// that would change them, on every rank, instead of a failed allocation (or swapping) minutes later.
#include "src/core/config.hpp"
#include "src/grid/grid.hpp"

namespace gt {

// Collective over the world (one all-reduce on the node, one over the world so that every rank fails alike).
void check_memory_fits(const Config& cfg, Grid& grid);

}  // namespace gt
