#pragma once
// The communication watchdog (train.watchdog_s, docs/reliability.md case 5). A rank blocked in one collective
// or point-to-point operation for longer than the limit prints which operation, which group and which of the
// group's ranks have not arrived, then aborts the job, so a hung node or a stopped rank does not burn the
// allocation in silence.
//   - The communicator backend brackets every blocking call (and every wait/test of a non-blocking one) with
//     enter()/leave(): a sequence number, the operation's name, its group, the time it began (relaxed atomics,
//     no system call: cheap enough for every call).
//   - A helper thread of each rank (no MPI calls: the library runs MPI_THREAD_FUNNELED) writes that state as a
//     heartbeat file <dir>/rank_<r> every few seconds, and watches its own main thread. When the main thread has
//     been inside one operation for longer than the limit, it reads the heartbeats of the group's ranks: a rank
//     whose heartbeat is stale is stopped, hung or dead (a SIGSTOPped process writes nothing); a rank whose
//     heartbeat is fresh is alive and its line says where it is. Then MPI_Abort (and, should the abort itself
//     hang, SIGALRM's default action a few seconds later).
//   - The report is also appended to a file (<output.dir>/watchdog.log): MPI_Abort may end the launcher before
//     it forwards the rank's stderr (seen under load in CI), and a batch system's output file can be lost too.
// The heartbeat directory must be on a file system the ranks share (the checkpoint directory has to be anyway);
// without one the report says that a rank's heartbeat is missing and the job is still aborted.
// Process-wide state by necessity: like a signal handler, the watchdog observes the whole process.
#include <string>
#include <vector>

namespace gt::watchdog {

// A communicator's identity in reports: its name ("dp", "tp", ...) and the world ranks of its members.
struct Group {
  std::string name;
  std::vector<int> world_ranks;
  std::string describe() const;  // "dp group (world ranks 0,1)"
};

// Around every blocking communication call of the main thread. `what` and `group` must outlive the call.
void enter(const char* what, const Group* group);
void leave();

// The report's "not arrived" part for rank `self` blocked in `what` on `group`, read from the heartbeat files:
// each rank of the group not waiting in the same operation, with where it is; a rank alive but blocked in
// another operation is followed to the ranks it waits for, so the stopped rank at the end of a chain is named.
// Empty when every rank has arrived. (Separate from the thread so a test can feed it heartbeat files.)
std::string not_arrived(const std::string& heartbeat_dir, double period_s, int self, const char* what,
                        const Group& group);

// What the run knows about its ranks beyond the heartbeats, added to the report when the watchdog fires: the
// straggler monitor's verdict after each step (src/train/adapt/straggler_monitor.cpp), since a rank that was slowing
// down is often the one that then stops. "" (the default): nothing added. Main thread; the helper thread reads it
// under a lock when it fires.
void set_context(const std::string& text);

// The report line (with its newline) of rank `self` that has waited `waited_s` in `what` on `group`, given the
// "not arrived" part (not_arrived) and the context set last. (Separate from the thread so a test can check it.)
std::string report_line(int self, double waited_s, const char* what, const Group* group, const std::string& missing,
                        double timeout_s);

// Starts the helper thread (collective only in that every rank should call it). timeout_s <= 0: nothing runs.
class Watchdog {
 public:
  // report_path: where the report line is appended besides stderr ("" for stderr only).
  Watchdog(double timeout_s, const std::string& heartbeat_dir, int world_rank, const std::string& report_path = "");
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace gt::watchdog
