#include "src/comm/watchdog.hpp"

#include <mpi.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace gt::watchdog {

namespace {

// What the main thread is blocked in. Written by the main thread only, read by the helper thread.
std::atomic<unsigned long> g_seq{0};
std::atomic<bool> g_in_op{false};
std::atomic<const char*> g_what{nullptr};
std::atomic<const Group*> g_group{nullptr};
std::atomic<int64_t> g_since_ns{0};  // steady clock, when the current (or last) operation began
// set_context's text: written by the main thread after a step, read by the helper thread when it fires.
std::mutex g_context_mu;
std::string g_context;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double wall_s() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string fmt(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", s);
  return b;
}

// One heartbeat: key=value fields separated by tabs (group descriptions hold spaces).
std::map<std::string, std::string> parse(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, '\t')) {
    const size_t eq = f.find('=');
    if (eq != std::string::npos) kv[f.substr(0, eq)] = f.substr(eq + 1);
  }
  return kv;
}

std::string ranks_csv(const Group& g) {
  std::string s;
  for (size_t i = 0; i < g.world_ranks.size(); ++i) s += (i ? "," : "") + std::to_string(g.world_ranks[i]);
  return s;
}

std::vector<int> parse_ranks(const std::string& csv) {
  std::vector<int> r;
  std::stringstream ss(csv);
  std::string f;
  while (std::getline(ss, f, ','))
    if (!f.empty()) r.push_back(std::atoi(f.c_str()));
  return r;
}

std::string heartbeat_path(const std::string& dir, int r) { return dir + "/rank_" + std::to_string(r); }

std::string missing_in(const std::string& dir, double period_s, int self, const char* what,
                       const std::string& group_desc, const std::vector<int>& ranks, std::vector<int>* seen, int depth);

// Where rank r is, as far as its heartbeat tells; *arrived: it waits in the same operation of the same group.
// A rank that is alive but waits in another operation is followed to the ranks *it* waits for (depth-limited,
// each rank once): with tp=2 dp=2 and rank 3 stopped, rank 0 waits on rank 2 in the dp all-reduce while rank 2
// waits on rank 3 in the tp all-reduce, and the report must name rank 3, the cause, not only rank 2.
std::string where(const std::string& dir, double period_s, int r, const char* what, const std::string& group_desc,
                  bool* arrived, std::vector<int>* seen, int depth) {
  *arrived = false;
  seen->push_back(r);
  struct stat st;
  std::ifstream f(heartbeat_path(dir, r));
  std::string line;
  if (::stat(heartbeat_path(dir, r).c_str(), &st) != 0 || !std::getline(f, line))
    return "rank " + std::to_string(r) + " (no heartbeat in " + dir + ": never started, or not on a shared file system)";
  const double age = wall_s() - (double(st.st_mtim.tv_sec) + 1e-9 * double(st.st_mtim.tv_nsec));
  std::map<std::string, std::string> kv = parse(line);
  const std::string who = "rank " + std::to_string(r) + " (pid " + kv["pid"] + " on " + kv["host"];
  if (age > 3 * period_s + 1) return who + ": no heartbeat for " + fmt(age) + " s: stopped, hung or dead)";
  if (kv["in_op"] == "1" && kv["op"] == what && kv["group"] == group_desc) {
    *arrived = true;
    return "";
  }
  if (kv["in_op"] != "1")
    return who + ": alive, computing or elsewhere, " + kv["for_s"] + " s since its last communication)";
  std::string s = who + ": alive, in " + kv["op"] + " on the " + kv["group"] + " for " + kv["for_s"] + " s";
  if (depth < 8) {
    const std::string inner =
        missing_in(dir, period_s, r, kv["op"].c_str(), kv["group"], parse_ranks(kv["ranks"]), seen, depth + 1);
    if (!inner.empty()) s += ", waiting for " + inner;
  }
  return s + ")";
}

// The ranks of a group (other than `self` and those already reported) that have not arrived in its operation.
std::string missing_in(const std::string& dir, double period_s, int self, const char* what,
                       const std::string& group_desc, const std::vector<int>& ranks, std::vector<int>* seen, int depth) {
  std::string missing;
  for (int r : ranks) {
    if (r == self || std::find(seen->begin(), seen->end(), r) != seen->end()) continue;
    bool arrived = false;
    const std::string w = where(dir, period_s, r, what, group_desc, &arrived, seen, depth);
    if (!arrived) missing += (missing.empty() ? "" : "; ") + w;
  }
  return missing;
}

}  // namespace

std::string Group::describe() const {
  return name + " group (world ranks " + ranks_csv(*this) + ")";
}

void enter(const char* what, const Group* group) {
  g_what.store(what, std::memory_order_relaxed);
  g_group.store(group, std::memory_order_relaxed);
  g_since_ns.store(steady_ns(), std::memory_order_relaxed);
  g_seq.fetch_add(1, std::memory_order_relaxed);
  g_in_op.store(true, std::memory_order_release);
}

void leave() {
  g_since_ns.store(steady_ns(), std::memory_order_relaxed);  // from now on: time since the last operation
  g_in_op.store(false, std::memory_order_release);
}

std::string not_arrived(const std::string& heartbeat_dir, double period_s, int self, const char* what,
                        const Group& group) {
  std::vector<int> seen{self};
  return missing_in(heartbeat_dir, period_s, self, what, group.describe(), group.world_ranks, &seen, 0);
}

void set_context(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_context_mu);
  g_context = text;
}

std::string report_line(int self, double waited_s, const char* what, const Group* group, const std::string& missing,
                        double timeout_s) {
  std::string context;
  {
    std::lock_guard<std::mutex> lock(g_context_mu);
    context = g_context;
  }
  const std::string arrived =
      missing.empty() ? "none by their heartbeats (every rank of the group waits: a deadlock or a lost message)" : missing;
  char head[512];
  std::snprintf(head, sizeof head, "gridtrain: error: watchdog: rank %d has waited %.0f s in %s on the %s; not arrived: ",
                self, waited_s, what ? what : "?", group ? group->describe().c_str() : "?");
  char tail[128];
  std::snprintf(tail, sizeof tail, "; aborting the job (train.watchdog_s = %g)\n", timeout_s);
  return head + arrived + (context.empty() ? "" : "; before the wait, " + context) + tail;
}

struct Watchdog::Impl {
  double timeout_s, period_s;
  std::string dir, report_path;
  int rank;
  std::string host;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;

  std::string path(int r) const { return heartbeat_path(dir, r); }

  void beat() {
    const bool in = g_in_op.load(std::memory_order_acquire);
    const char* what = g_what.load(std::memory_order_relaxed);
    const Group* g = g_group.load(std::memory_order_relaxed);
    const double for_s = 1e-9 * double(steady_ns() - g_since_ns.load(std::memory_order_relaxed));
    std::ostringstream os;
    os << "seq=" << g_seq.load(std::memory_order_relaxed) << "\tin_op=" << (in ? 1 : 0)
       << "\top=" << (in && what ? what : "-") << "\tgroup=" << (in && g ? g->describe() : "-")
       << "\tranks=" << (in && g ? ranks_csv(*g) : "") << "\tfor_s=" << fmt(for_s) << "\tpid=" << getpid()
       << "\thost=" << host << "\n";
    const std::string tmp = path(rank) + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      if (!f) return;  // the report will say this rank's heartbeat is missing
      f << os.str();
    }
    std::rename(tmp.c_str(), path(rank).c_str());
  }

  void fire(double waited) {
    const char* what = g_what.load(std::memory_order_relaxed);
    const Group* g = g_group.load(std::memory_order_relaxed);
    std::string missing;
    if (g) missing = not_arrived(dir, period_s, rank, what ? what : "", *g);
    const std::string line = report_line(rank, waited, what, g, missing, timeout_s);
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    if (!report_path.empty()) {
      // one write(2) with O_APPEND: lines of several ranks firing at once do not interleave
      const int fd = ::open(report_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ssize_t put = ::write(fd, line.data(), line.size());
        (void)put;  // nothing better to do on a failed write: stderr has the line already
        ::fsync(fd);
        ::close(fd);
      }
    }
    // give the launcher's forwarder a moment to deliver the line before the abort tears the job down
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    alarm(15);  // should the abort itself hang in the stuck library: SIGALRM's default action ends the process
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  void loop() {
    double last_beat = -1e30;
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (stopping) break;
      const double now = 1e-9 * double(steady_ns());
      if (now - last_beat >= period_s) {
        beat();
        last_beat = now;
      }
      if (g_in_op.load(std::memory_order_acquire)) {
        const double waited = now - 1e-9 * double(g_since_ns.load(std::memory_order_relaxed));
        if (waited > timeout_s) {
          beat();  // our own state is current for the others' reports
          fire(waited);
        }
      }
    }
  }
};

Watchdog::Watchdog(double timeout_s, const std::string& heartbeat_dir, int world_rank,
                   const std::string& report_path) {
  if (!(timeout_s > 0)) return;
  impl_ = new Impl;
  impl_->timeout_s = timeout_s;
  impl_->report_path = report_path;
  impl_->period_s = std::clamp(timeout_s / 4, 0.25, 5.0);  // fresh enough that staleness means "not running"
  impl_->dir = heartbeat_dir;
  impl_->rank = world_rank;
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  impl_->host = h;
  if (!g_in_op.load()) g_since_ns.store(steady_ns());  // "since the last communication" starts now
  ::mkdir(heartbeat_dir.c_str(), 0755);  // every rank: the directory may not be shared (then each has its own)
  impl_->beat();
  impl_->thread = std::thread([this] { impl_->loop(); });
}

Watchdog::~Watchdog() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
  std::remove(impl_->path(impl_->rank).c_str());
  ::rmdir(impl_->dir.c_str());  // the last rank out removes the directory (the others fail: not empty)
  delete impl_;
}

}  // namespace gt::watchdog
