// Host mirrors of device buffers (src/train/host_mirror.hpp): on the CPU build the mirror is the buffer itself (no
// copy); the copy path a GPU build takes (Mode::Copy, GRIDTRAIN_TEST_HOST_MIRROR=copy) carries checkpoints and
// gathers exactly: a run saved and resumed through copied mirrors continues bit for bit like the uninterrupted run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "src/train/host_mirror.hpp"
#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"

namespace {

// A device buffer of n floats filled with 1, 2, 3, ... (written through a Kokkos kernel, so on a GPU build the
// values exist only on the device until a mirror pulls them).
gt::DeviceView<float> counting(long n) {
  gt::DeviceView<float> d("counting", n);
  Kokkos::parallel_for("fill", gt::range(0, n), KOKKOS_LAMBDA(long i) { d(i) = float(i + 1); });
  return d;
}

struct TrainResult {
  std::vector<double> losses;
  std::vector<std::pair<std::string, std::vector<float>>> params, adam_v;
  int rc = -1;
};

TrainResult train(const gt::Config& c, bool copy_mirrors) {
  if (copy_mirrors) setenv("GRIDTRAIN_TEST_HOST_MIRROR", "copy", 1);
  TrainResult r;
  {
    gt::Grid grid(MPI_COMM_WORLD, 1, 1, 1, gt::AllreduceAlgo::Library);
    gt::Trainer t(c, grid, c.to_toml());
    r.rc = t.run();
    for (const auto& s : t.history()) r.losses.push_back(s.loss);
    r.params = t.gather_params();
    r.adam_v = t.gather(gt::Buffer::AdamV);
  }
  unsetenv("GRIDTRAIN_TEST_HOST_MIRROR");
  return r;
}

}  // namespace

TEST(HostMirror, IsTheBufferItselfOnHostBuilds) {
  auto d = counting(1000);
  gt::HostMirror<float> m(d.data(), d.extent(0));
  if constexpr (gt::exec_on_host) {
    EXPECT_TRUE(m.aliases());
    EXPECT_EQ(m.data(), d.data()) << "a CPU build must not copy the state to read it";
  } else {
    EXPECT_FALSE(m.aliases());
  }
  m.pull();
  EXPECT_EQ(m.data()[999], 1000.0f);
}

TEST(HostMirror, CopyModeMovesDataOnlyOnPullAndPush) {
  auto d = counting(5000);
  gt::HostMirror<float> m(d.data(), d.extent(0), gt::MirrorMode::Copy);
  ASSERT_FALSE(m.aliases());
  ASSERT_NE(m.data(), d.data());
  m.pull();
  for (long i = 0; i < 5000; ++i) ASSERT_EQ(m.data()[i], float(i + 1)) << i;
  for (long i = 0; i < 5000; ++i) m.data()[i] = -1.0f;
  auto before = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  EXPECT_EQ(before(17), 18.0f) << "a write to the copy reached the device before push()";
  m.push();
  auto after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  for (long i = 0; i < 5000; ++i) ASSERT_EQ(after(i), -1.0f) << i;
}

// Reference: the uninterrupted 5-step run with the default mirrors. The other run stops after 3 steps (checkpoint
// written from copied mirrors), then resumes (read into copied mirrors, pushed to the state) for steps 4-5. Any
// missing pull (a checkpoint of stale host memory) or push (a resume that never reaches the state) changes the
// losses of steps 4-5 and the final parameters; equality is exact because the arithmetic is the same.
TEST(HostMirror, CheckpointThroughCopiedMirrorsResumesBitwise) {
  gt::Config c = gt_test::tiny_config(gt_test::fresh_dir(MPI_COMM_WORLD, "mirror_ref"));
  const TrainResult whole = train(c, false);
  ASSERT_EQ(whole.rc, 0);
  ASSERT_EQ(whole.losses.size(), 5u);

  c.output.dir = gt_test::fresh_dir(MPI_COMM_WORLD, "mirror_copy");
  c.train.max_steps_per_run = 3;
  c.checkpoint.resume = "auto";
  const TrainResult first = train(c, true);
  EXPECT_EQ(first.rc, gt::kExitPreempted);
  const TrainResult second = train(c, true);
  ASSERT_EQ(second.rc, 0);
  ASSERT_EQ(second.losses.size(), 2u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first.losses[i], whole.losses[i]) << "step " << i + 1;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(second.losses[i], whole.losses[3 + i]) << "step " << i + 4;
  ASSERT_EQ(second.params.size(), whole.params.size());
  for (size_t t = 0; t < whole.params.size(); ++t) {
    EXPECT_EQ(second.params[t].second, whole.params[t].second) << whole.params[t].first;
    EXPECT_EQ(second.adam_v[t].second, whole.adam_v[t].second) << whole.adam_v[t].first;
  }
}
