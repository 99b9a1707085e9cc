// The `gridtrain` command as users, scripts and MPI launchers start it: a small statically linked program that
// blocks the stop signals (SIGTERM, SIGUSR1) and executes the real program, gridtrain-bin next to it, in the
// same process (same PID, same arguments, same environment).
// Why: between exec and main() the real program spends ~100 ms (more on a loaded node) in the dynamic loader
// mapping and relocating its 50-odd shared libraries (Kokkos, oneDNN, MPI, HDF5, OpenBLAS) and running their
// constructors; a stop signal in that window killed it by the default action (exit 143, no checkpoint). A
// handler of our own cannot help there: even the executable's .preinit_array runs only after every library is
// loaded and relocated (docs/reliability.md, case 8, has the measured windows). A blocked mask survives execve,
// so such a signal stays pending until main() has installed its handler and unblocks it
// (src/core/stop_signal.cpp), and the request is honoured as documented: checkpoint, exit 75.
// Static: no dynamic loader runs before this main(), so the window left is the kernel's execve itself.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int, char** argv) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGUSR1);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  // The resolved path of this program (a symlink to it in PATH works too), its directory + "gridtrain-bin".
  static const char kProgram[] = "gridtrain-bin";
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof kProgram);
  if (n <= 0 || n >= ssize_t(sizeof path - sizeof kProgram)) {
    std::fprintf(stderr, "gridtrain: error: cannot find the program's own path (/proc/self/exe): %s\n",
                 n <= 0 ? std::strerror(errno) : "path too long");
    return 1;
  }
  path[n] = '\0';
  char* slash = std::strrchr(path, '/');
  std::memcpy(slash ? slash + 1 : path, kProgram, sizeof kProgram);
  execv(path, argv);
  std::fprintf(stderr, "gridtrain: error: cannot execute %s (it is installed next to the gridtrain command): %s\n",
               path, std::strerror(errno));
  return 1;
}
