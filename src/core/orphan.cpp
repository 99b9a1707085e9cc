#include "src/core/orphan.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace gt {

void die_with_launcher() {
  if (!std::getenv("PMI_RANK") && !std::getenv("PMIX_RANK") && !std::getenv("OMPI_COMM_WORLD_RANK")) return;
  // SIGKILL, not a stop request: the peers of an orphan are usually orphaned too, and a checkpoint needs them all.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) {  // the parent died before the call above: the signal will never come
    std::fprintf(stderr, "gridtrain: error: the MPI launcher of this rank is gone; exiting\n");
    std::_Exit(1);
  }
}

}  // namespace gt
