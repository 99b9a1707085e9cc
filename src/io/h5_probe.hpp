#pragma once
// Reading an HDF5 file in a child process first, so that a crash or a hang of the HDF5 library on damaged
// metadata (libhdf5 1.10.8: tests/fuzz/hdf5_crashes/) costs that child instead of the run: resume=auto then
// falls back to the previous checkpoint, and `gridtrain inspect` prints one line, instead of exit 139 or a
// process that never returns.
//
// The child is this same executable started again (posix_spawn of /proc/self/exe, which the C library does
// with a vfork-like clone: nothing of the MPI process is copied, no MPI call happens in the child) with a
// private first argument; its main() hands it to serve_probe_if_asked() before anything else (no MPI_Init,
// no Kokkos), which runs walk_hdf5_metadata and exits. An executable whose main() does not make that call
// (the unit tests) cannot be started as a probe: there probe_hdf5_file() answers Unavailable and callers read
// the file in their own process, as before.
#include <string>

namespace gt::io {

// Called first thing in main(). When argv is a probe invocation, runs it and returns the exit status for
// main() to return; otherwise returns -1 and records that this executable can serve as the probe.
// Process-wide state by necessity (like a signal handler): whether /proc/self/exe understands the probe
// argument is a property of the program, not of any caller.
int serve_probe_if_asked(int argc, char** argv);

struct ProbeVerdict {
  enum Kind {
    Survived,     // the child read everything and exited 0 (the file may still be invalid: HDF5 said so)
    Crashed,      // killed by a signal or a non-zero exit: HDF5 crashed on this file
    Hung,         // over the time limit (CPU time, or 5x as long in all): killed
    Unavailable,  // no child could be started (see detail); the caller reads the file itself
  } kind = Unavailable;
  std::string detail;  // "SIGSEGV", "after 30 s of CPU time", "cannot start a child process: ..."
};

// Walks path in a child process: killed once it has used timeout_s of CPU time (a loop inside libhdf5) or run
// 5 x timeout_s in all (the known hang sleeps; counted only while this process runs). Rank-local, no MPI.
ProbeVerdict probe_hdf5_file(const std::string& path, double timeout_s);

// The time limit: GRIDTRAIN_H5_PROBE_TIMEOUT_S when set (> 0), else 30 s of CPU time (150 s of waiting). The
// walk of a small checkpoint takes ~0.1 s of CPU, most of it the program's start; the margin is for large files
// and slow file systems.
double probe_timeout_s();

// "" when the file survived the walk (or no child could be started), else the problem for a one-line message:
// "HDF5 crashed reading it (SIGSEGV): its metadata is damaged" / "HDF5 did not finish reading it (hung: killed
// after 30 s of CPU time; ...): its metadata is damaged". Rank-local.
std::string hdf5_probe_problem(const std::string& path);

}  // namespace gt::io
