#pragma once
// Collective error agreement: a step that fails on one rank must fail on every rank, with the same message,
// so that no rank is left waiting in the next collective call.
#include <mpi.h>

#include <exception>
#include <string>

#include "src/core/error.hpp"

namespace gt::io {

// Every rank passes its own error ("" = fine). If any rank failed, every rank throws gt::Error with the
// message of the lowest failed rank. Collective.
void agree(MPI_Comm comm, const std::string& local_error);

// Runs f() and agrees on its outcome. f must make the same collective calls on every rank up to the point
// where it can fail locally (e.g. only rank-local work, or collectives that fail symmetrically).
template <class F>
void run_agreed(MPI_Comm comm, F&& f) {
  std::string err;
  try {
    f();
  } catch (const std::exception& e) {
    err = e.what();
    if (err.empty()) err = "unknown error";
  }
  agree(comm, err);
}

}  // namespace gt::io
