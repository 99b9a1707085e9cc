#include "src/io/h5_probe.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <iostream>
#include <thread>

#include "src/core/test_hooks.hpp"
#include "src/io/h5_walk.hpp"

extern char** environ;

namespace gt::io {

namespace {

// argv[1] of a probe child: not a command a user would type, and not a section.key=value override.
constexpr const char* kProbeArg = "--gridtrain-internal-h5-probe";
// The probe child's heap limit (RLIMIT_DATA): far above a metadata walk, far below a node's memory.
constexpr rlim_t kProbeHeapBytes = rlim_t(2) << 30;
bool g_serves_probe = false;  // set by serve_probe_if_asked(): see the header

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    default: return nullptr;
  }
}

// utime + stime of a child from /proc/<pid>/stat (fields 14 and 15, after the command name in parentheses); 0
// when unreadable.
double child_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (fields >> f); ++i) {  // field 3 is the state
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

}  // namespace

int serve_probe_if_asked(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kProbeArg) != 0) {
    g_serves_probe = true;
    return -1;
  }
  if (argc != 4) return 2;
  // A stop request meant for the run (Slurm signals the whole process group) must not kill the child, or the
  // run would take a valid checkpoint for a damaged one; the parent bounds the child's time itself.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_IGN);
  // A parent killed while it waits (a cancelled job) takes a hung child with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != static_cast<pid_t>(std::atoll(argv[3]))) return 0;  // the parent is already gone
  // Damaged metadata can make libhdf5 ask for gigabytes (CI's fuzzer found a 4.2 GB malloc inside the library).
  // The walk needs metadata and one chunk at a time, so the child's heap is capped: such a request fails here and
  // the file is called damaged, instead of the child taking the node's memory next to the training ranks.
  const rlimit heap{kProbeHeapBytes, kProbeHeapBytes};
  ::setrlimit(RLIMIT_DATA, &heap);
  // Test hook: GRIDTRAIN_TEST_H5_PROBE_SLEEP_S makes the child hang as libhdf5 does on some files, whatever the
  // library does with the file at hand (the time limit is tested without depending on a libhdf5 bug).
  if (const double s = test_hooks::h5_probe_sleep_s(); s > 0)  // src/core/test_hooks.hpp
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
  walk_hdf5_metadata(argv[2]);
  // _exit: nothing of the library's own shutdown (atexit) is part of the verdict.
  ::_exit(0);
}

namespace {
// Starts this executable as the probe child on `path`; returns posix_spawn's error (0: started).
int spawn_probe_child(const std::string& path, pid_t* pid_out) {
  const std::string ppid = std::to_string(::getpid());
  char arg0[] = "gridtrain-h5-probe";
  char arg1[sizeof "--gridtrain-internal-h5-probe"];
  std::strcpy(arg1, kProbeArg);
  std::string path_arg = path, ppid_arg = ppid;
  char* child_argv[] = {arg0, arg1, path_arg.data(), ppid_arg.data(), nullptr};

  // The child's output goes nowhere (a crash handler's backtrace is not the run's business); its signals start
  // at their defaults and unblocked (the parent may have blocked the stop signals).
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(pid_out, "/proc/self/exe", &files, &attr, child_argv, environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// Waits for the child within the limits below: true with its status when it ended by itself; false with the
// verdict (Hung, or Unavailable when waiting failed) otherwise.
bool wait_probe_child(pid_t pid, double timeout_s, int* status, ProbeVerdict* v) {
  // Polled rather than blocked in waitpid: the limits need no timer signal, and a stop signal arriving meanwhile
  // only sets the trainer's flag. Two limits, so that neither a loaded machine nor a suspended job makes a valid
  // file look hung:
  //  - the child's CPU time (a loop inside the library): a child starved of CPU by other processes (4-8 ranks
  //    on 2 cores) does not reach it;
  //  - kWaitFactor times as long in all (the known hang input sleeps inside the library, as a stuck file system
  //    would), counted only while this process runs and in steps of at most 0.1 s: a job suspended as a whole
  //    (SIGSTOP, Slurm's suspend) stops the child too, and the wall time that passes meanwhile is not the child's.
  constexpr double kWaitFactor = 5;
  using Clock = std::chrono::steady_clock;
  const Clock::duration max_step = std::chrono::milliseconds(100);
  Clock::duration counted{0};
  Clock::time_point last = Clock::now();
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) {
      v->detail = std::string("cannot wait for the child process: ") + std::strerror(errno);
      return false;
    }
    const Clock::time_point now = Clock::now();
    counted += std::min(now - last, max_step);
    last = now;
    const double cpu = child_cpu_seconds(pid), waited = std::chrono::duration<double>(counted).count();
    if (cpu >= timeout_s || waited >= kWaitFactor * timeout_s) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      v->kind = ProbeVerdict::Hung;
      char buf[96];
      std::snprintf(buf, sizeof buf, cpu >= timeout_s ? "after %.3g s of CPU time" : "after %.3g s",
                    cpu >= timeout_s ? cpu : waited);
      v->detail = buf;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The verdict of a child that ended by itself.
ProbeVerdict verdict_of_status(int status) {
  ProbeVerdict v;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    v.kind = ProbeVerdict::Survived;
  } else if (WIFSIGNALED(status)) {
    v.kind = ProbeVerdict::Crashed;
    const char* name = signal_name(WTERMSIG(status));
    v.detail = name ? name : "signal " + std::to_string(WTERMSIG(status));
  } else {
    // A crash handler (UCX's, say) may turn the signal into an exit status.
    v.kind = ProbeVerdict::Crashed;
    v.detail = "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return v;
}
}  // namespace

ProbeVerdict probe_hdf5_file(const std::string& path, double timeout_s) {
  ProbeVerdict v;
  if (!g_serves_probe) return v;  // Unavailable, no detail: this executable is not the gridtrain program
  pid_t pid = -1;
  if (const int rc = spawn_probe_child(path, &pid); rc != 0) {
    v.detail = std::string("cannot start a child process: ") + std::strerror(rc);
    return v;
  }
  int status = 0;
  if (!wait_probe_child(pid, timeout_s, &status, &v)) return v;
  return verdict_of_status(status);
}

double probe_timeout_s() {
  const char* s = std::getenv("GRIDTRAIN_H5_PROBE_TIMEOUT_S");
  const double t = s && *s ? std::atof(s) : 0;
  return t > 0 ? t : 30.0;
}

std::string hdf5_probe_problem(const std::string& path) {
  const double timeout = probe_timeout_s();
  const ProbeVerdict v = probe_hdf5_file(path, timeout);
  switch (v.kind) {
    case ProbeVerdict::Survived: return "";
    case ProbeVerdict::Crashed: return "HDF5 crashed reading it (" + v.detail + "): its metadata is damaged";
    case ProbeVerdict::Hung:
      return "HDF5 did not finish reading it (hung: killed " + v.detail +
             "; GRIDTRAIN_H5_PROBE_TIMEOUT_S sets the limit): its metadata is damaged";
    case ProbeVerdict::Unavailable:
      if (!v.detail.empty())
        std::cerr << "gridtrain: warning: " << path << ": " << v.detail
                  << "; reading it without the guard against HDF5 crashing on damaged metadata" << std::endl;
      return "";
  }
  return "";
}

}  // namespace gt::io
