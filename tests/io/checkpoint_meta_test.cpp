// Metadata round trip, keep-K pruning, the `latest` pointer and stale temporary files.
#include <gtest/gtest.h>

#include <fstream>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/inspect.hpp"
#include "tests/io/io_test_util.hpp"
#include "tests/common/text_file.hpp"

using namespace iotest;
namespace fs = std::filesystem;

namespace {

std::string save_step(const std::string& dir, int64_t step, int keep, const gt::CheckpointMeta& meta = {}) {
  Shards s = make_shards(small_model(), Layout::Rows, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD),
                         100 + step, true);
  gt::CheckpointOptions opt;
  opt.dir = dir;
  opt.keep = keep;
  return gt::save_checkpoint(MPI_COMM_WORLD, opt, step, s.list, meta);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

using gt_test::read_text;

}  // namespace

TEST(CheckpointMeta, RoundTrip) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "meta");
  gt::CheckpointMeta meta;
  meta.ints = {{"grid.tp", 2}, {"grid.dp", -3}, {"sampler.position", int64_t(1) << 40}};
  meta.reals = {{"schedule.lr", 3e-4 / 7}, {"loss", -0.0}, {"tiny", 1e-300}};
  std::string config = "[model]\nname = \"gpt2\"\n";
  for (int i = 0; i < 4000; ++i) config += "# padding line " + std::to_string(i) + " to exceed 64 KiB\n";
  ASSERT_GT(config.size(), 70000u);
  meta.strings = {{"config", config}, {"model.signature", "gpt2 L=12 C=768 \xce\xb1"}, {"empty", ""}};
  const std::string path = save_step(dir, 42, 3, meta);

  gt::CheckpointMeta want = meta;
  want.ints["step"] = 42;
  want.ints["format_version"] = gt::kCheckpointFormatVersion;
  want.strings["gridtrain_kind"] = "checkpoint";
  const gt::CheckpointMeta got = gt::read_checkpoint_meta(MPI_COMM_WORLD, path);
  EXPECT_EQ(got.ints, want.ints);
  EXPECT_EQ(got.strings, want.strings);
  ASSERT_EQ(got.reals.size(), want.reals.size());
  for (const auto& [k, v] : want.reals) EXPECT_EQ(std::memcmp(&got.reals.at(k), &v, sizeof v), 0) << k;

  Shards s = make_shards(small_model(), Layout::Cols, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 0, false);
  gt::CheckpointMeta loaded;
  gt::load_checkpoint(MPI_COMM_WORLD, path, s.list, loaded);
  EXPECT_EQ(loaded.ints, want.ints);
  EXPECT_EQ(loaded.strings.at("config"), config);
  EXPECT_EQ(count_wrong(s, 142), 0);
  EXPECT_EQ(gt::verify_checkpoint(MPI_COMM_WORLD, path).ints.at("step"), 42);

  if (comm_rank(MPI_COMM_WORLD) == 0) {  // the serial inspector sees the same
    EXPECT_EQ(gt::hdf5_file_kind(path), "checkpoint");
    std::ostringstream os;
    EXPECT_EQ(gt::inspect_checkpoint(path, os), 0) << os.str();
    EXPECT_NE(os.str().find("grid.tp = 2"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("params/wte  (6,10)  checksum"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("problems: 0"), std::string::npos) << os.str();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointMeta, KeepLatestAndPruning) {
  const int rank = comm_rank(MPI_COMM_WORLD);
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "keep") + "/ckpt/sub";  // created by save
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), std::nullopt);
  for (int64_t step : {1, 2, 3}) save_step(dir, step, 2);
  if (rank == 0) {
    // Things pruning must leave alone, and a stale temporary file from a crashed save.
    std::ofstream(dir + "/notes.txt") << "keep me";
    std::ofstream(dir + "/step_1.h5") << "not our pattern";
    std::ofstream(dir + "/step_00000002.h5.tmp") << "half written";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), dir + "/step_00000003.h5");
  const std::string last = save_step(dir, 4, 2);
  EXPECT_EQ(last, dir + "/step_00000004.h5");
  if (rank == 0) {
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"latest", "notes.txt", "step_00000003.h5", "step_00000004.h5",
                                                       "step_1.h5"}));
    EXPECT_EQ(read_text(dir + "/latest"), "step_00000004.h5\n");
  }
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), last);
  // `latest` is the commit record: it wins over a newer-numbered file...
  if (rank == 0) std::ofstream(dir + "/latest") << "step_00000003.h5\n";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), dir + "/step_00000003.h5");
  // ...and without it the newest step is chosen.
  if (rank == 0) fs::remove(dir + "/latest");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), last);
  // keep <= 0 keeps everything.
  save_step(dir, 5, 0);
  if (rank == 0) {
    EXPECT_TRUE(fs::exists(dir + "/step_00000003.h5"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A save that cannot happen raises on every rank and leaves the existing checkpoints alone.
TEST(CheckpointMeta, FailedSaveLeavesPrevious) {
  const int rank = comm_rank(MPI_COMM_WORLD);
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "fail");
  const std::string first = save_step(dir, 1, 1);
  if (rank == 0) std::ofstream(dir + "/blocker") << "a file where the directory should be";
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    save_step(dir + "/blocker/ckpt", 2, 1);
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/blocker/ckpt: cannot create checkpoint directory"), std::string::npos)
        << e.what();
  }
  // A tensor list the file layout cannot hold (rank 0 names a tensor with a bad hyperslab).
  Shards s = make_shards(small_model(), Layout::Rows, rank, comm_size(MPI_COMM_WORLD), 3, true);
  if (rank == 0) s.list[1].start[0] = 4;  // (5) tensor: start 4 + count > 5
  gt::CheckpointOptions opt;
  opt.dir = dir;
  opt.keep = 1;
  try {
    gt::save_checkpoint(MPI_COMM_WORLD, opt, 2, s.list, gt::CheckpointMeta{});
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("lies outside the global shape"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), first);
  if (rank == 0) {
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"blocker", "latest", "step_00000001.h5"}));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
