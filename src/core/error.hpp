#pragma once
// The one exception type for bad input at a boundary (config, command line, file, grid). The top level
// prints what() on the rank that saw it, as one line, and aborts the job so that no rank hangs.
#include <stdexcept>
#include <string>

namespace gt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Exit codes of the gridtrain command (documented in README and used by the Slurm scripts).
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,        // bad input or a runtime failure
  kExitUsage = 2,        // bad command line
  kExitPreempted = 75,   // stopped by SIGTERM/SIGUSR1 after writing a checkpoint (EX_TEMPFAIL)
};

}  // namespace gt
