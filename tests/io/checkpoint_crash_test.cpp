// Atomicity: every rank SIGKILLed halfway through a save (GRIDTRAIN_CRASH_IN_CHECKPOINT) must leave the
// previous checkpoint valid, named by `latest` and chosen by find_latest_checkpoint; the stale .tmp is
// removed by the next successful save. The saves run in child jobs: mpiexec -n 2 checkpoint_crash_helper.
//   args: <mpiexec> <helper>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/common/text_file.hpp"

namespace fs = std::filesystem;

namespace {

std::string g_mpiexec, g_helper;

struct Result {
  int rc;
  std::string out;
};

// Runs the helper under mpiexec -n 2 with an optional crash step, capturing stdout.
Result run_job(const std::string& args, const std::string& crash_step = "") {
  const std::string env = crash_step.empty() ? "" : "GRIDTRAIN_CRASH_IN_CHECKPOINT=" + crash_step + " ";
  const std::string cmd = env + g_mpiexec + " -n 2 " + g_helper + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!p) return r;
  std::array<char, 256> buf;
  while (fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

using gt_test::read_text;

}  // namespace

TEST(CheckpointCrash, KilledSaveLeavesPreviousCheckpoint) {
  const std::string dir = (fs::temp_directory_path() / ("gridtrain_io_crash_" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  const std::string ten = dir + "/step_00000010.h5", twenty = dir + "/step_00000020.h5";

  ASSERT_EQ(run_job("save " + dir + " 10").rc, 0);
  ASSERT_TRUE(fs::exists(ten));

  const Result crashed = run_job("save " + dir + " 20", "20");
  EXPECT_NE(crashed.rc, 0) << "the crash hook did not fire";
  EXPECT_FALSE(fs::exists(twenty));
  EXPECT_TRUE(fs::exists(twenty + ".tmp")) << "the kill should come halfway through the write";
  EXPECT_EQ(read_text(dir + "/latest"), "step_00000010.h5\n");

  Result latest = run_job("latest " + dir);
  EXPECT_EQ(latest.rc, 0);
  EXPECT_EQ(latest.out, "latest " + ten + " step 10\n");

  // Without `latest`, the scan ignores the stale .tmp as well.
  fs::remove(dir + "/latest");
  latest = run_job("latest " + dir);
  EXPECT_EQ(latest.out, "latest " + ten + " step 10\n");

  // The crash hook is for its step only; the next save succeeds and removes the stale file.
  ASSERT_EQ(run_job("save " + dir + " 30", "20").rc, 0);
  EXPECT_FALSE(fs::exists(twenty + ".tmp"));
  latest = run_job("latest " + dir);
  EXPECT_EQ(latest.rc, 0);
  EXPECT_EQ(latest.out, "latest " + dir + "/step_00000030.h5 step 30\n");
  fs::remove_all(dir);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <mpiexec> <checkpoint_crash_helper>\n", argv[0]);
    return 2;
  }
  g_mpiexec = argv[1];
  g_helper = argv[2];
  return RUN_ALL_TESTS();
}
