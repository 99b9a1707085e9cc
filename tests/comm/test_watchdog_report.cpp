// The watchdog's "not arrived" report (src/comm/watchdog.cpp, not_arrived) read from hand-written heartbeat
// files, so the wait chain of issue 14's case 5 is checked whichever rank's watchdog happens to fire first: in
// a tp=2 dp=2 job with rank 3 stopped, rank 0 waits in the dp all-reduce for rank 2, which waits in the tp
// all-reduce for rank 3. CI once saw rank 0 fire first and report only "rank 2 ... alive": the stopped rank
// must be named at the end of the chain.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

#include "src/comm/watchdog.hpp"

namespace {

using gt::watchdog::Group;
using gt::watchdog::not_arrived;

class HeartbeatDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gridtrain_wdr_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    for (int r = 0; r < 8; ++r) std::remove((dir + "/rank_" + std::to_string(r)).c_str());
    rmdir(dir.c_str());
  }
  // One heartbeat as the watchdog thread writes it; age_s > 0 back-dates its modification time (a stopped rank).
  void beat(int r, const Group* in, double age_s = 0) {
    const std::string p = dir + "/rank_" + std::to_string(r);
    {
      std::ofstream f(p);
      std::string ranks;
      if (in)
        for (size_t i = 0; i < in->world_ranks.size(); ++i) ranks += (i ? "," : "") + std::to_string(in->world_ranks[i]);
      f << "seq=7\tin_op=" << (in ? 1 : 0) << "\top=" << (in ? "allreduce" : "-")
        << "\tgroup=" << (in ? in->describe() : "-") << "\tranks=" << ranks << "\tfor_s=9\tpid=" << 1000 + r
        << "\thost=node" << r << "\n";
    }
    if (age_s > 0) {
      timespec ts[2];
      clock_gettime(CLOCK_REALTIME, &ts[0]);
      ts[0].tv_sec -= time_t(age_s);
      ts[1] = ts[0];
      ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), ts, 0), 0);
    }
  }
  std::string dir;
  const double period = 2.5;  // the watchdog's period for train.watchdog_s = 10: stale after 3 periods + 1 s
  const Group dp02{"dp", {0, 2}}, tp23{"tp", {2, 3}}, tp01{"tp", {0, 1}}, dp13{"dp", {1, 3}};
};

TEST_F(HeartbeatDir, FollowsTheChainToTheStoppedRank) {
  beat(0, &dp02);
  beat(2, &tp23);           // alive, but waiting elsewhere
  beat(3, nullptr, 30.0);   // stopped 30 s ago
  const std::string s = not_arrived(dir, period, 0, "allreduce", dp02);
  EXPECT_NE(s.find("rank 2 (pid 1002 on node2: alive, in allreduce on the tp group (world ranks 2,3) for 9 s, "
                   "waiting for rank 3 (pid 1003 on node3: no heartbeat for 30 s: stopped, hung or dead))"),
            std::string::npos)
      << s;
}

TEST_F(HeartbeatDir, TheStoppedRankInTheOwnGroup) {
  beat(2, &tp23);
  beat(3, nullptr, 30.0);
  const std::string s = not_arrived(dir, period, 2, "allreduce", tp23);
  EXPECT_EQ(s, "rank 3 (pid 1003 on node3: no heartbeat for 30 s: stopped, hung or dead)");
}

TEST_F(HeartbeatDir, EveryRankArrived) {
  beat(0, &dp02);
  beat(2, &dp02);
  EXPECT_EQ(not_arrived(dir, period, 0, "allreduce", dp02), "");
}

TEST_F(HeartbeatDir, ACycleEnds) {
  // 0 waits (dp 0,2) on 2; 2 waits (tp 2,3) on 3; 3 waits (dp 1,3) on 1; 1 waits (tp 0,1) on 0: a deadlock, every
  // heartbeat fresh. The walk visits each rank once and ends.
  beat(0, &dp02);
  beat(2, &tp23);
  beat(3, &dp13);
  beat(1, &tp01);
  const std::string s = not_arrived(dir, period, 0, "allreduce", dp02);
  EXPECT_NE(s.find("rank 2 "), std::string::npos) << s;
  EXPECT_NE(s.find("waiting for rank 3 "), std::string::npos) << s;
  EXPECT_NE(s.find("waiting for rank 1 "), std::string::npos) << s;
  EXPECT_EQ(s.find("no heartbeat"), std::string::npos) << s;
}

TEST_F(HeartbeatDir, AMissingHeartbeatIsSaid) {
  beat(0, &dp02);
  const std::string s = not_arrived(dir, period, 0, "allreduce", dp02);
  EXPECT_NE(s.find("rank 2 (no heartbeat in " + dir), std::string::npos) << s;
}

// The report line carries the straggler monitor's last verdict (set_context, issue 25): a rank that was slowing
// down is often the one that then stops, and the report says so beside the heartbeats' account.
TEST(WatchdogReport, NamesTheStragglersOfTheLastStep) {
  const Group dp01{"dp", {0, 1}};
  gt::watchdog::set_context("");
  const std::string plain = gt::watchdog::report_line(0, 12, "allreduce", &dp01, "rank 1 (stopped)", 10);
  EXPECT_EQ(plain, "gridtrain: error: watchdog: rank 0 has waited 12 s in allreduce on the dp group (world ranks 0,1); "
                   "not arrived: rank 1 (stopped); aborting the job (train.watchdog_s = 10)\n");
  gt::watchdog::set_context("stragglers: rank 1 at 2.95x its peers' median compute at the last step (flagged for the "
                            "last 7 steps)");
  const std::string named = gt::watchdog::report_line(0, 12, "allreduce", &dp01, "rank 1 (stopped)", 10);
  EXPECT_EQ(named, "gridtrain: error: watchdog: rank 0 has waited 12 s in allreduce on the dp group (world ranks 0,1); "
                   "not arrived: rank 1 (stopped); before the wait, stragglers: rank 1 at 2.95x its peers' median "
                   "compute at the last step (flagged for the last 7 steps); aborting the job "
                   "(train.watchdog_s = 10)\n");
  // Every rank arrived: the heartbeats' sentence, then the verdict.
  const std::string none = gt::watchdog::report_line(0, 12, "allreduce", &dp01, "", 10);
  EXPECT_NE(none.find("not arrived: none by their heartbeats"), std::string::npos) << none;
  EXPECT_NE(none.find("before the wait, stragglers: rank 1"), std::string::npos) << none;
  gt::watchdog::set_context("");
}

}  // namespace
