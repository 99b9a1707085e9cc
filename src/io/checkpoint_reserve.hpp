#pragma once
// The room of a checkpoint, taken before any rank writes. A file system that filled while HDF5 wrote the .tmp
// file (filled as soon as the .tmp appeared) hung 2 ranks inside HDF5's file close (one rank in MPI_Allreduce,
// the other in MPI_Bcast: a failed write left them on different paths of the library's own collectives) and
// crashed 1 rank in H5Fclose; a free-space check before the write cannot close that window. So rank 0 creates
// the .tmp file as an empty HDF5 file whose blocks are already allocated (posix_fallocate) to the size the whole
// checkpoint can reach (checkpoint_file_bytes); every rank then opens it read-write, and no write of the save can
// meet a full disk. HDF5 cuts the file to its real end when it closes it, which gives the unused part back.
#include <cstdint>
#include <string>

namespace gt::io {

// Rank-local (one rank per save). Creates `tmp` holding an empty HDF5 file (made in memory, so no HDF5 call
// writes to the disk here) with `bytes` allocated to it. Throws gt::Error "<dir>: no room for the checkpoint
// (F MiB free, it needs N MiB); not saved, the previous checkpoints are kept" when the file system cannot
// allocate them, and "<tmp>: ..." on other failures; `tmp` is removed on every error. Where the file system
// cannot reserve (posix_fallocate says EOPNOTSUPP or EINVAL) the free space is compared instead and false is
// returned; true: the blocks are allocated.
bool reserve_checkpoint_file(const std::string& dir, const std::string& tmp, int64_t bytes);

}  // namespace gt::io
