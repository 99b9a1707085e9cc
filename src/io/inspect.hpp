#pragma once
// Serial look into gridtrain HDF5 files, for the `gridtrain inspect` command. Needs no MPI (uses HDF5's
// default POSIX driver), so it works on one process without mpiexec.
#include <ostream>
#include <string>

namespace gt {

// Prints the root attributes (meta) and, for each dataset, its name, shape, dtype and whether its stored
// checksum matches the data. Returns 0 when every dataset verifies, 1 otherwise (gt::kExitError).
// Throws gt::Error "<file>: ..." when the file cannot be read at all.
int inspect_checkpoint(const std::string& path, std::ostream& os);

// The root attribute gridtrain_kind ("checkpoint", "tokens", ...), "" if the file has none. Throws
// gt::Error "<file>: no such file" / "<file>: not a readable HDF5 file".
std::string hdf5_file_kind(const std::string& path);

}  // namespace gt
