#pragma once
// Pieces shared by save, load, verify and inspect: opening a checkpoint, checking its root attributes,
// and checking whole datasets against their stored checksums by reading them in row blocks.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/io/checkpoint.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

// Largest block a rank reads at once while verifying a whole dataset.
constexpr int64_t kVerifyBlockBytes = 64ll << 20;

// Whether a tensor of this global shape is transferred collectively (same answer on every rank).
bool use_collective(const std::vector<int64_t>& global_shape, const CheckpointOptions& opt);

// File-access list for MPI-IO on comm with our alignment/hints (default options for reading).
H5Handle make_mpio_fapl(MPI_Comm comm, const CheckpointOptions& opt);

// Collective open (read-only) with agreed errors: "<file>: no such file", "<file>: not a readable HDF5 file".
H5Handle open_checkpoint_file(MPI_Comm comm, const std::string& path);

// Collective: before any rank opens path with HDF5, rank 0 reads its metadata in a child process
// (src/io/h5_probe.hpp; every rank would read the same bytes). Throws on every rank "<file>: HDF5 crashed reading
// it (SIGSEGV): its metadata is damaged" (or "... did not finish ... (hung) ...") when the child crashed or hung.
void check_hdf5_survives(MPI_Comm comm, const std::string& path);

// Checks gridtrain_kind and format_version and returns all root attributes as meta. Rank-local; throws
// gt::Error "<file>: ..." (callers agree).
CheckpointMeta read_checkpoint_root(hid_t file, const std::string& path);

// Checks that `name` exists, is float32 (and of `expected_shape` when that is non-empty) and has a checksum
// attribute; returns the stored checksum. Rank-local; throws gt::Error "<file>: dataset '<name>' ...".
uint64_t check_dataset(hid_t file, const std::string& path, const std::string& name,
                       const std::vector<int64_t>& expected_shape);

// Checksum of rows [r0, r1) of a float32 dataset (dim 0 split; every other dim whole). With a collective
// dxpl every rank of the file's communicator must call it, r0 == r1 selecting nothing.
uint64_t rows_checksum(hid_t dset, const std::vector<int64_t>& shape, int64_t r0, int64_t r1, hid_t dxpl,
                       std::vector<float>& buf);

// This rank's partial checksums of whole datasets: dim 0 of each is split evenly over the ranks (in rounds
// of at most kVerifyBlockBytes per rank), read with independent I/O (each piece is one contiguous range).
// Collective (one agreement at the end); sum the results over comm to get full checksums.
// Also throws (agreed) "<file>: dataset '<name>' holds a non-finite value ..." for NaN/inf.
std::vector<uint64_t> partial_checksums_by_rows(MPI_Comm comm, hid_t file, const std::string& path,
                                               const std::vector<std::string>& names);

// Rank-local: throws "<file>: dataset '<name>' holds a non-finite value (nan at element i)" when data[0, n)
// (global flat elements first, first + 1, ...; first < 0: not said) holds NaN or inf.
void check_finite(const std::string& path, const std::string& name, const float* data, int64_t n, int64_t first);

// Sums partials over comm and throws "<file>: checksum mismatch in dataset '<name>'" (same on every rank)
// for the first dataset whose sum differs from expected.
void compare_checksums(MPI_Comm comm, const std::string& path, const std::vector<std::string>& names,
                       std::vector<uint64_t> partials, const std::vector<uint64_t>& expected);

}  // namespace gt::io
