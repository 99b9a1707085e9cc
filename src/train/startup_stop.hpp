#pragma once
// A stop request (SIGTERM, SIGUSR1: Slurm's time-limit warning, scancel) that arrives while a run is starting is
// honoured at the next start-up phase, not only at the first step boundary: a start-up that ran long (a huge
// model's checks, a slow file system) ignored a single SIGTERM until it reached a step. Before the trainer exists
// nothing has been trained, so nothing is saved: the run ends with exit 75 (kExitPreempted), as a stop does, and
// a restart resumes from whatever was there before.
#include <mpi.h>

#include <string>

#include "src/core/error.hpp"

namespace gt {

struct StoppedDuringStartup : Error {
  using Error::Error;  // what(): the phase that would have come next
};

// Collective over comm: throws StoppedDuringStartup("<next phase>") on every rank when any rank was asked to stop
// (one all-reduce: a signal may reach only some ranks, and no rank may leave the others in a collective).
void stop_point(MPI_Comm comm, const std::string& next_phase);

}  // namespace gt
