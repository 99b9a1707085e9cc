#include "src/io/agree.hpp"

namespace gt::io {

void agree(MPI_Comm comm, const std::string& local_error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local_error.empty() ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int len = rank == first ? static_cast<int>(local_error.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string msg = rank == first ? local_error : std::string(len, '\0');
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, comm);
  throw Error(msg);
}

}  // namespace gt::io
