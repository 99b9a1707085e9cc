#pragma once
// A walk over everything of an HDF5 file that gridtrain's readers parse, done only to see whether the HDF5
// library survives it. Debian's libhdf5 1.10.8 crashes (SIGSEGV, a wild memcpy) or loops forever on some
// damaged metadata before it could return an error (the inputs in tests/fuzz/hdf5_crashes/), so the trainer
// and `gridtrain inspect` run this walk in a child process first (src/io/h5_probe.hpp) and only open the file
// themselves when the child came back. Errors HDF5 *returns* are ignored here: the readers report those with
// their own one-line messages.
#include <string>

namespace gt::io {

// Serial (default file driver, no MPI). Opens path read-only, reads the value of every attribute of the root
// and of every object (variable-length strings included: the global heap is where the known crashes are),
// opens every dataset with its type, dataspace and creation list, reads its first and last element, and closes
// the file. Returns normally unless the library crashes or hangs.
void walk_hdf5_metadata(const std::string& path);

}  // namespace gt::io
