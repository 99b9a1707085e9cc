#pragma once
// A look into gridtrain HDF5 files, for the `gridtrain inspect` command, on one process (MPI initialised, no
// mpiexec needed): the listing reads with HDF5's POSIX driver, the verdict is verify_checkpoint on MPI_COMM_SELF.
#include <ostream>
#include <string>

#include "src/io/checkpoint.hpp"

namespace gt {

// Prints the root attributes (meta) and, for each dataset, its name, shape, dtype and whether its stored
// checksum matches the data; then the verdict of the validation a resume applies, verify_checkpoint(path, req)
// ("resume: accepted" / "resume: refused: <why>"), so that a file inspect passes is one a resume with those
// requirements accepts, and the reverse. requirements_problem: why the requirements could not be made (then
// the file is refused with it). Returns 0 when accepted, 1 otherwise (gt::kExitError). Throws gt::Error
// "<file>: ..." when the file cannot be read at all.
int inspect_checkpoint(const std::string& path, std::ostream& os, const CheckpointRequirements& req = {},
                       const std::string& requirements_problem = "");

// The root attribute gridtrain_kind ("checkpoint", "tokens", ...), "" if the file has none. Throws
// gt::Error "<file>: no such file" / "<file>: not a readable HDF5 file".
std::string hdf5_file_kind(const std::string& path);

}  // namespace gt
