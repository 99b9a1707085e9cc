#pragma once
// The global picture of a sharded tensor list: every rank's shards, gathered so that every rank knows every
// tensor (a pipeline stage may not hold all of them, yet each dataset call is collective) and can check
// that the writers' hyperslabs tile each tensor exactly.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/io/checkpoint.hpp"
#include "src/io/shard_pieces.hpp"

namespace gt::io {

struct TableEntry {
  std::string name;
  std::vector<int64_t> global_shape;
  int local = -1;               // index into this rank's tensor list, -1 if this rank holds no part of it
  bool tiled = false;           // the writer hyperslabs cover every element exactly once
  std::string tiling_problem;   // why not, for messages
  std::vector<Box> writer_boxes;  // of all ranks (a shard with a flat range gives several)
};

// Collective. Entries sorted by name. Throws gt::Error (on every rank) for malformed shards, duplicate
// names or ranks that disagree on a tensor's global shape.
std::vector<TableEntry> gather_shard_table(MPI_Comm comm, const std::vector<TensorShard>& tensors);

}  // namespace gt::io
