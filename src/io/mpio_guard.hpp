#pragma once
// Agreed outcomes for the MPI-IO calls HDF5 makes while a checkpoint is written. HDF5 1.10's collective writes
// (its metadata flush at close, raw data above collective_min_bytes) and its resize at close are MPI-IO calls of
// its own: a write that failed on one rank only (EIO from a failing disk) sent that rank down the library's error
// path while the others went on into the next collective inside the library, and the job hung in H5Fclose; at 1
// rank the failed close left the file registered and MPI_Finalize crashed closing it again. So for a file
// registered here (one .tmp file of a save), the MPI profiling interface's MPI_File_write_at_all and
// MPI_File_set_size (defined in mpio_guard.cpp, calling PMPI_*) agree their outcome over the file's ranks: every
// rank returns the failure when one rank failed, and HDF5 fails alike everywhere. A file given up after an agreed
// error is discarded: its writes, resizes and syncs succeed without touching the disk, so that HDF5 can close it.
// Independent writes (raw data below collective_min_bytes) cannot be agreed inside the call: a failure of one
// returns on that rank only, and the save's DeferredErrors agrees it before the next collective call.
// Process-wide state by necessity: the MPI entry points are the process's.
#include <hdf5.h>
#include <mpi.h>

namespace gt::io {

// Registers the MPI-IO handle of an HDF5 file opened with the MPI-IO driver (collective: dups comm) for its
// lifetime; unregisters it (collective) in the destructor. Must outlive every HDF5 call on the file.
class GuardedFile {
 public:
  GuardedFile(hid_t file, hid_t fapl, MPI_Comm comm);
  ~GuardedFile();
  GuardedFile(const GuardedFile&) = delete;
  GuardedFile& operator=(const GuardedFile&) = delete;
  // From now on writes, resizes and syncs of the file succeed without I/O (the file is being given up).
  void discard();

 private:
  MPI_File handle_ = MPI_FILE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace gt::io
