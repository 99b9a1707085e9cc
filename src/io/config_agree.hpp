#pragma once
// Start-up agreement of the configuration: ranks that read different decks (a stale copy on one node) or run
// different builds used to hang in the first collective (another n_layer, d_model, steps) or, worse, train on
// silently with inconsistent ranks (another seed, lr, micro_batch_size).
#include <mpi.h>

#include <map>
#include <string>

namespace gt::io {

// Identity of this build: a hash of the running executable's bytes (hex), or "" when it cannot be read.
std::string build_identity();

// Collective over comm, one small all-reduce when everything agrees. Compares every rank's resolved
// configuration (section.key -> value) and build identity with rank 0's; on a mismatch every rank throws the
// same gt::Error naming the first differing key (in key order), its value on the lowest differing rank and
// on rank 0.
void check_config_agreement(MPI_Comm comm, const std::map<std::string, std::string>& config,
                            const std::string& build_id);

}  // namespace gt::io
