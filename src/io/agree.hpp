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

// Deferred agreement for loops over many datasets. One allreduce per dataset is what makes a checkpoint of a
// few hundred small tensors slow at scale (and with oversubscribed ranks), so a loop records the first local
// error and keeps making every collective call with no data, and agrees once: before each collective
// transfer (no rank enters it with a failure the others do not know about) and at the end.
class DeferredErrors {
 public:
  explicit DeferredErrors(MPI_Comm comm) : comm_(comm) {}
  bool failed() const { return !err_.empty(); }
  // Runs f() unless this rank has already failed; records the first error instead of throwing.
  template <class F>
  void attempt(F&& f) {
    if (failed()) return;
    try {
      f();
    } catch (const std::exception& e) {
      err_ = e.what();
      if (err_.empty()) err_ = "unknown error";
    }
  }
  // Collective: throws the first failed rank's message on every rank if any rank has failed.
  void agree() { io::agree(comm_, err_); }

 private:
  MPI_Comm comm_;
  std::string err_;
};

}  // namespace gt::io
