#pragma once
// Every test hook of the production code, read and documented in one place. A test hook is an environment
// variable that makes one production path misbehave on purpose (a rank that fails, an overflow, a crash in the
// middle of a checkpoint, a machine with less memory), so that a test can check how gridtrain handles what it
// cannot otherwise cause on demand. Unset (or empty), every hook leaves the program as in production.
//
// No other file of src/ or kernels/ reads a GRIDTRAIN_TEST_* or GRIDTRAIN_CRASH_* variable: the test
// core_test_hooks_only_here fails when one does. Header-only (kernels/ uses it without linking src/core).
//
//   variable                          effect                                             used by
//   GRIDTRAIN_TEST_FAIL_RANK=r        world rank r throws alone, before the trainer      tests/cli/test_bad_input.sh
//   + GRIDTRAIN_TEST_FAIL_STEP=s        ... or as step s begins (the others go on into its collectives)
//   GRIDTRAIN_TEST_INF_RANK=r         world rank r puts an inf into one gradient element tests/train/test_loss_scale.cpp,
//   + GRIDTRAIN_TEST_INF_STEP=s         as step s begins (once: a rollback repeats s)     tests/cli/test_bad_steps.sh,
//   + GRIDTRAIN_TEST_INF_NAN=1          a NaN instead                                     tests/cli/test_restart.sh,
//   + GRIDTRAIN_TEST_INF_VALUE=x        x instead (a finite spike)                        scripts/fault_matrix.sh
//   GRIDTRAIN_TEST_HOST_MIRROR=copy   every host mirror of the trainer is a separate     tests/train/test_host_mirror.cpp
//                                     copy, as on a GPU build (src/train/host_mirror.hpp)
//   GRIDTRAIN_TEST_SLOW_BLOCK=l:ms,.. block l takes ms longer in each forward and        tests/plan/test_rebalance_run.sh
//                                     backward (a slower device; src/train/report/block_timer.cpp)
//   GRIDTRAIN_TEST_SLOW_RANK=r:k      world rank r computes k times slower: it sleeps     tests/cli/test_straggler.sh
//                                     (k - 1) x its last compute each step (a throttled
//                                     device; src/train/adapt/straggler_monitor.cpp)
//   GRIDTRAIN_TEST_RELAYOUT=s:t,p,d   after step s the run continues on tp t x pp p x     tests/train/test_relayout.sh
//                                     dp d, the state handed over in memory (a forced
//                                     live re-layout; src/train/adapt/layout_adapter.cpp)
//   GRIDTRAIN_TEST_LAYOUT_PREDICT=    parallel.adapt = full: the calibrated planner's     tests/train/test_relayout_decided.sh
//     t,p,d:f[;t,p,d:f...]            step of layout tp t x pp p x dp d is multiplied by
//                                     f (a model that misjudges this machine, on demand;
//                                     src/train/adapt/layout_predict.cpp)
//   GRIDTRAIN_TEST_MEMAVAILABLE_MB=m  the memory pre-check sees m MiB available          tests/cli/test_memory_check.sh
//   GRIDTRAIN_TEST_DEVICE_FREE_MB=m   ... and m MiB of free device memory                tests/cli/test_memory_check.sh
//   GRIDTRAIN_TEST_DEVICE_MEMORY=cuda a CPU build checks the communicator choice as a     tests/cli/test_bad_input.sh
//                                     CUDA build would (MPI on device memory refused)
//   GRIDTRAIN_TEST_H5_PROBE_SLEEP_S=t the HDF5 probe child hangs t seconds first (the      tests/cli/test_hdf5_crash.sh
//                                     time limit tested without a libhdf5 bug)
//   GRIDTRAIN_CRASH_IN_CHECKPOINT=s   every rank dies halfway through writing step s's   tests/cli/test_restart.sh,
//                                     checkpoint                                         tests/io/checkpoint_crash_test.cpp
//   GRIDTRAIN_TEST_POWERCAP_ROOT=d    the run's RAPL energy reader looks in d instead    by hand (tests/energy gives
//   GRIDTRAIN_TEST_CPU_ROOT=d         of /sys/class/powercap, /sys/devices/system/cpu    the reader its paths itself)
//                                     (a fake counter tree; src/energy/energy_meter.hpp)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/core/error.hpp"

namespace gt {
namespace test_hooks {

// The value of a hook, nullptr when unset or empty.
inline const char* value(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A hook's list cut at every sep: "a,b," is "a", "b", "" (an empty item, which the parsers reject).
inline std::vector<std::string> items(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(sep, at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// GRIDTRAIN_TEST_FAIL_RANK / _STEP: the world rank that fails, and whether it fails as a step begins (which)
// or before the trainer (in cmd_train).
struct FailHook {
  bool armed = false;
  int rank = -1;
  bool at_step = false;
  int step = -1;
  bool fails_at_start(int world_rank) const { return armed && !at_step && rank == world_rank; }
  bool fails_in_step(int world_rank, int s) const { return armed && at_step && rank == world_rank && step == s; }
};
inline FailHook fail_hook() {
  FailHook h;
  if (const char* r = value("GRIDTRAIN_TEST_FAIL_RANK")) h.armed = true, h.rank = std::atoi(r);
  if (const char* s = value("GRIDTRAIN_TEST_FAIL_STEP")) h.at_step = true, h.step = std::atoi(s);
  return h;
}

// GRIDTRAIN_TEST_INF_*: which rank puts what into its first gradient element as which step begins.
struct GradientHook {
  bool armed = false;
  int rank = -1, step = -1;
  bool nan = false;          // GRIDTRAIN_TEST_INF_NAN=1
  bool has_value = false;    // GRIDTRAIN_TEST_INF_VALUE given: a finite value instead of inf
  float finite_value = 0.f;
};
inline GradientHook gradient_hook() {
  GradientHook h;
  const char* r = value("GRIDTRAIN_TEST_INF_RANK");
  const char* s = value("GRIDTRAIN_TEST_INF_STEP");
  if (!r || !s) return h;
  h.armed = true;
  h.rank = std::atoi(r);
  h.step = std::atoi(s);
  if (const char* n = value("GRIDTRAIN_TEST_INF_NAN")) h.nan = std::atoi(n) != 0;
  if (const char* v = value("GRIDTRAIN_TEST_INF_VALUE")) h.has_value = true, h.finite_value = std::strtof(v, nullptr);
  return h;
}

// GRIDTRAIN_TEST_HOST_MIRROR=copy.
inline bool host_mirror_copy() {
  const char* m = value("GRIDTRAIN_TEST_HOST_MIRROR");
  return m && std::strcmp(m, "copy") == 0;
}

// GRIDTRAIN_TEST_SLOW_BLOCK=l:ms[,l:ms...]: (block, extra seconds) pairs; throws gt::Error naming the
// variable on a malformed list (the caller checks the block range, which it knows).
// GRIDTRAIN_TEST_SLOW_RANK=r:k: rank r is k (>= 1) times slower; {-1, 1} when unset. Throws gt::Error naming
// the variable on a malformed value.
struct SlowRank {
  int rank = -1;
  double factor = 1;
};
inline SlowRank slow_rank() {
  SlowRank out;
  const char* e = value("GRIDTRAIN_TEST_SLOW_RANK");
  if (!e) return out;
  const std::string text = e;
  const size_t colon = text.find(':');
  char* end = nullptr;
  const long r = colon == std::string::npos ? -1 : std::strtol(text.c_str(), &end, 10);
  const double k = colon == std::string::npos ? 0 : std::atof(text.c_str() + colon + 1);
  if (colon == 0 || r < 0 || end != text.c_str() + colon || !(k >= 1))
    throw Error("GRIDTRAIN_TEST_SLOW_RANK expects RANK:FACTOR with FACTOR >= 1, got '" + text + "'");
  out.rank = int(r);
  out.factor = k;
  return out;
}

// GRIDTRAIN_TEST_RELAYOUT=s:t,p,d: after step s, continue on tp t, pp p, dp d; step 0 when unset. Throws
// gt::Error naming the variable on a malformed value (whether the layout fits is the caller's check).
inline constexpr const char* kRelayout = "GRIDTRAIN_TEST_RELAYOUT";  // named in the caller's size error
struct Relayout {
  int step = 0, tp = 1, pp = 1, dp = 1;
};
inline Relayout relayout() {
  Relayout out;
  const char* e = value("GRIDTRAIN_TEST_RELAYOUT");
  if (!e) return out;
  char tail = 0;
  if (std::sscanf(e, "%d:%d,%d,%d%c", &out.step, &out.tp, &out.pp, &out.dp, &tail) != 4 || out.step < 1 ||
      out.tp < 1 || out.pp < 1 || out.dp < 1)
    throw Error(std::string("GRIDTRAIN_TEST_RELAYOUT expects STEP:TP,PP,DP (each >= 1), got '") + e + "'");
  return out;
}

// GRIDTRAIN_TEST_LAYOUT_PREDICT=t,p,d:f[;...]: factors on the planner's predicted step of those layouts; empty
// when unset. Throws gt::Error naming the variable on a malformed entry.
struct LayoutFactor {
  int tp = 1, pp = 1, dp = 1;
  int zero = -1, micro_batch = -1;  // -1: any
  double factor = 1;
};
inline std::vector<LayoutFactor> layout_predict_factors() {
  std::vector<LayoutFactor> out;
  const char* e = value("GRIDTRAIN_TEST_LAYOUT_PREDICT");
  if (!e) return out;
  const std::string text = e;
  for (const std::string& part : items(text, ';')) {
    LayoutFactor f;
    char tail = 0;
    const bool full = std::sscanf(part.c_str(), "%d,%d,%d,%d,%d:%lf%c", &f.tp, &f.pp, &f.dp, &f.zero, &f.micro_batch,
                                  &f.factor, &tail) == 6 && f.zero >= 0 && f.micro_batch >= 1;
    if (!full) f.zero = f.micro_batch = -1;
    if ((!full && std::sscanf(part.c_str(), "%d,%d,%d:%lf%c", &f.tp, &f.pp, &f.dp, &f.factor, &tail) != 4) ||
        f.tp < 1 || f.pp < 1 || f.dp < 1 || !(f.factor > 0))
      throw Error("GRIDTRAIN_TEST_LAYOUT_PREDICT expects TP,PP,DP[,ZERO,MICRO_BATCH]:FACTOR[;...] (each >= 1, ZERO "
                  ">= 0, FACTOR > 0), got '" + text + "'");
    out.push_back(f);
  }
  return out;
}

inline constexpr const char* kSlowBlock = "GRIDTRAIN_TEST_SLOW_BLOCK";  // named in the caller's range error
inline std::vector<std::pair<int, double>> slow_blocks() {
  std::vector<std::pair<int, double>> out;
  const char* e = value(kSlowBlock);
  if (!e) return out;
  const std::string text = e;
  for (const std::string& item : items(text, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw Error("GRIDTRAIN_TEST_SLOW_BLOCK expects BLOCK:MS[,BLOCK:MS], got '" + text + "'");
    out.emplace_back(std::atoi(item.substr(0, colon).c_str()), std::atof(item.substr(colon + 1).c_str()) * 1e-3);
  }
  return out;
}

// GRIDTRAIN_TEST_MEMAVAILABLE_MB / _DEVICE_FREE_MB in bytes; -1 when unset.
inline double mem_available_bytes() {
  const char* t = value("GRIDTRAIN_TEST_MEMAVAILABLE_MB");
  return t ? std::atof(t) * 1048576.0 : -1.0;
}
inline double device_free_bytes() {
  const char* t = value("GRIDTRAIN_TEST_DEVICE_FREE_MB");
  return t ? std::atof(t) * 1048576.0 : -1.0;
}

// GRIDTRAIN_TEST_DEVICE_MEMORY=cuda.
inline bool device_memory_as_cuda() {
  const char* d = value("GRIDTRAIN_TEST_DEVICE_MEMORY");
  return d && std::strcmp(d, "cuda") == 0;
}

// GRIDTRAIN_TEST_H5_PROBE_SLEEP_S in seconds; 0 when unset.
inline double h5_probe_sleep_s() {
  const char* s = value("GRIDTRAIN_TEST_H5_PROBE_SLEEP_S");
  return s ? std::atof(s) : 0.0;
}

// GRIDTRAIN_CRASH_IN_CHECKPOINT: the step whose checkpoint is interrupted; -1 when unset.
inline long long crash_in_checkpoint_step() {
  const char* s = value("GRIDTRAIN_CRASH_IN_CHECKPOINT");
  return s ? std::strtoll(s, nullptr, 10) : -1;
}

// GRIDTRAIN_TEST_POWERCAP_ROOT / GRIDTRAIN_TEST_CPU_ROOT: the sysfs roots the run's energy meter reads.
inline std::string powercap_root() {
  const char* r = value("GRIDTRAIN_TEST_POWERCAP_ROOT");
  return r ? r : "/sys/class/powercap";
}
inline std::string cpu_sysfs_root() {
  const char* r = value("GRIDTRAIN_TEST_CPU_ROOT");
  return r ? r : "/sys/devices/system/cpu";
}

}  // namespace test_hooks
}  // namespace gt
