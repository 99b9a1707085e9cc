// Test-suite only (LD_PRELOAD, set on every test by tests/CMakeLists.txt; docs/testing.md): a rank of MPICH's
// ch4:ucx device that waits for a message spins in ucp_worker_progress and never gives up its core. The suite runs
// 4 and 8 ranks on 2 cores, so a rank with work to do waited for spinning ranks' time slices: perf showed about
// two thirds of a 4-rank run's CPU time in the UCX/MPICH progress loop, and an 8-rank test ran 54 s instead of 6.
// This wrapper of ucp_worker_progress lets an idle rank give its core away: sched_yield() after each of the first
// IDLE_SPINS polls that found nothing (a message that is about to arrive costs no sleep), then a 20 us sleep per
// idle poll. Only when progress waits; what is sent and received, and in which order, is unchanged, so every
// result (bitwise comparisons included) is the same as without it. GRIDTRAIN_TEST_MPI_SPIN=1 turns it off in a run
// (for the with/without comparison in docs/testing.md).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { IDLE_SPINS = 64, IDLE_SLEEP_NS = 20000 };

typedef unsigned (*progress_fn)(void*);
static __thread unsigned idle_polls;  // polls in a row that progressed nothing, per calling thread

unsigned ucp_worker_progress(void* worker) {
  static progress_fn real;
  static int spin = -1;
  if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
  if (spin < 0) {
    const char* v = getenv("GRIDTRAIN_TEST_MPI_SPIN");
    spin = v && strcmp(v, "1") == 0;
  }
  const unsigned events = real(worker);
  if (events || spin) {
    idle_polls = 0;
    return events;
  }
  if (++idle_polls <= IDLE_SPINS) {
    sched_yield();
  } else {
    const struct timespec pause = {0, IDLE_SLEEP_NS};
    nanosleep(&pause, 0);
  }
  return events;
}
