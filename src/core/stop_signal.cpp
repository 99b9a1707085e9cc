#include "src/core/stop_signal.hpp"

#include <signal.h>

#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace gt {

namespace {

// The signal number of the last request, kFromPeer when another rank asked (the trainer shares requests), 0: none.
volatile sig_atomic_t g_stop = 0;
constexpr int kFromPeer = -1;
constexpr const char* kCarryEnv = "GRIDTRAIN_STOP_PENDING";
constexpr int kStopSignals[] = {SIGTERM, SIGUSR1};

void on_stop_signal(int sig) {
  if (sig == SIGTERM && g_stop == SIGTERM) {  // asked twice: the run is stuck or the user means it, end now
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
    return;
  }
  g_stop = sig;
}

void set_mask(int how) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kStopSignals) sigaddset(&set, s);
  sigprocmask(how, &set, nullptr);
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : kStopSignals) sigaction(s, &sa, nullptr);
  if (const char* carried = std::getenv(kCarryEnv)) {
    const int sig = std::atoi(carried);
    if (sig > 0) g_stop = sig;
    unsetenv(kCarryEnv);
  }
  set_mask(SIG_UNBLOCK);  // a signal that arrived while blocked is delivered (to the handler) now
}

void prepare_stop_signals_for_exec() {
  set_mask(SIG_BLOCK);
  if (g_stop > 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%d", int(g_stop));
    setenv(kCarryEnv, buf, 1);
  }
}

void restore_default_stop_signals() {
  for (int s : kStopSignals) signal(s, SIG_DFL);
  set_mask(SIG_UNBLOCK);
  if (g_stop > 0) raise(g_stop);
}

bool stop_requested_locally() { return g_stop != 0; }
void request_stop_locally() {
  if (g_stop == 0) g_stop = kFromPeer;
}

}  // namespace gt
