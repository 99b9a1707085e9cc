#include "src/train/startup_stop.hpp"

#include "src/core/stop_signal.hpp"

namespace gt {

void stop_point(MPI_Comm comm, const std::string& next_phase) {
  int stop = stop_requested_locally() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, comm);
  if (stop) throw StoppedDuringStartup(next_phase);
}

}  // namespace gt
