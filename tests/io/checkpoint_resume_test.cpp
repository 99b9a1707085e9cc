// Which checkpoint resume=auto continues from (issue 14, cases 1, 2, 3, 9, 10): a `latest` that is missing,
// empty, garbage, binary or names a missing file is reported and the most recently *written* valid checkpoint is
// chosen (not the abandoned run's larger step); every kind of damage to the newest checkpoint falls back with a
// warning that carries HDF5's own words; a directory whose checkpoints are all invalid is an error, not a fresh
// start; pruning never deletes files of another history; root attributes are range-checked; NaN/inf is refused
// on save and on load. The expected answers are fixed by construction (which file was written when and damaged
// how), never taken from the code under test.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "tests/io/h5_edit.hpp"
#include "tests/io/io_test_util.hpp"

using namespace iotest;
namespace fs = std::filesystem;

namespace {

std::string save(const std::string& dir, int64_t step, int keep = 0, const gt::CheckpointMeta& meta = {}) {
  Shards s = make_shards(small_model(), Layout::Rows, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 500 + step,
                         true);
  gt::CheckpointOptions opt;
  opt.dir = dir;
  opt.keep = keep;
  return gt::save_checkpoint(MPI_COMM_WORLD, opt, step, s.list, meta);
}

gt::CheckpointRequirements model_requirements() {
  gt::CheckpointRequirements req;
  for (const Spec& s : small_model()) req.datasets.push_back({s.name, s.shape});
  req.ints.push_back({"step", 0, 1000, ""});
  return req;
}

template <class F>
void on_rank0(F&& f) {
  if (comm_rank(MPI_COMM_WORLD) == 0) f();
  MPI_Barrier(MPI_COMM_WORLD);
}

// find_latest_checkpoint's answer and rank 0's stderr; the error text instead when it throws.
struct Found {
  std::optional<std::string> path;
  std::string error, warnings;
};
Found find(const std::string& dir, const gt::CheckpointRequirements& req = {}) {
  Found f;
  if (comm_rank(MPI_COMM_WORLD) == 0) testing::internal::CaptureStderr();
  try {
    f.path = gt::find_latest_checkpoint(MPI_COMM_WORLD, dir, req);
  } catch (const gt::Error& e) {
    f.error = e.what();
  }
  if (comm_rank(MPI_COMM_WORLD) == 0) f.warnings = testing::internal::GetCapturedStderr();
  return f;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Flips one byte of the first occurrence of `needle` in the file (an attribute value in an object header).
void flip_first(const std::string& path, const std::string& needle) {
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(io)), {});
  const size_t at = all.find(needle);
  ASSERT_NE(at, std::string::npos);
  io.seekp(static_cast<std::streamoff>(at + 2));
  const char c = static_cast<char>(all[at + 2] ^ 0x01);
  io.write(&c, 1);
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

}  // namespace

// Run A saved steps 2, 4, 6; the user restarted from step 2 and run B saved step 3 (latest -> step 3). With
// `latest` damaged in any way the choice must stay step 3, the most recently written, and be said.
TEST(CheckpointResume, LatestValidatedOnRead) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "latest");
  save(dir, 2), save(dir, 4), save(dir, 6);
  const std::string b3 = save(dir, 3);
  EXPECT_EQ(find(dir).path, b3);  // the intact commit record wins over larger steps
  const std::string latest = dir + "/latest";
  const std::vector<std::pair<std::string, std::function<void()>>> damage = {
      {"is missing", [&] { fs::remove(latest); }},
      {"is empty", [&] { write_bytes(latest, ""); }},
      {"does not name a checkpoint file (it holds 'garbage ", [&] { write_bytes(latest, "garbage here\n"); }},
      {"does not name a checkpoint file (it holds '\\x00\\xff", [&] { write_bytes(latest, std::string("\0\xff\x01zz", 5)); }},
      {"names step_00000009.h5, which does not exist", [&] { write_bytes(latest, "step_00000009.h5\n"); }},
      {"does not name a checkpoint file (it holds '../step_00000006.h5')",
       [&] { write_bytes(latest, "../step_00000006.h5\n"); }},
  };
  for (const auto& [problem, act] : damage) {
    on_rank0(act);
    const Found f = find(dir);
    EXPECT_EQ(f.path, b3) << problem;
    if (comm_rank(MPI_COMM_WORLD) == 0) {
      EXPECT_CONTAINS(f.warnings, "gridtrain: warning: " + latest + " " + problem);
      EXPECT_CONTAINS(f.warnings, "falling back to " + b3);
    }
  }
}

// Every kind of damage to the newest checkpoint falls back to the previous valid one, with the reason.
TEST(CheckpointResume, EveryDamageFallsBack) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "damage");
  const gt::CheckpointRequirements req = model_requirements();
  const std::string good = save(dir, 1);
  const std::string newest = dir + "/step_00000002.h5";
  const std::vector<std::pair<std::string, std::function<void()>>> damage = {
      {"dataset 'params/h.0/ln.b' is missing", [&] { h5_replace_dataset(newest, "params/h.0/ln.b", {}); }},
      {"dataset 'params/wte': shape (6,9) does not match the model's (6,10)",
       [&] { h5_replace_dataset(newest, "params/wte", {6, 9}); }},
      {"checksum mismatch in dataset 'adam_m/h.0/attn.qkv.w'", [&] { h5_flip_in_dataset(newest, "adam_m/h.0/attn.qkv.w"); }},
      {"(HDF5: ", [&] { flip_first(newest, "checkpoint"); }},  // the gridtrain_kind value in the root header
      {"not a readable HDF5 file (HDF5: ", [&] { fs::resize_file(newest, fs::file_size(newest) / 2); }},
      {"not a readable HDF5 file (HDF5: ", [&] { write_bytes(newest, "not hdf5 at all\n"); }},
      {"holds a non-finite value (nan", [&] { h5_poke(newest, "adam_v/tiny", 1, NAN); }},
  };
  for (const auto& [problem, act] : damage) {
    save(dir, 2);
    on_rank0(act);
    const Found f = find(dir, req);
    EXPECT_EQ(f.path, good) << problem << "\n" << f.error;
    if (comm_rank(MPI_COMM_WORLD) == 0) {
      EXPECT_CONTAINS(f.warnings, "gridtrain: warning: skipping invalid checkpoint " + newest + ": ");
      EXPECT_CONTAINS(f.warnings, problem);
      EXPECT_CONTAINS(f.warnings, "falling back to " + good);
    }
  }
}

// Checkpoints exist but none is valid: an error naming them; nothing is removed.
TEST(CheckpointResume, NoneValidRefusesFreshStart) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "nonevalid");
  const std::string one = save(dir, 1), two = save(dir, 2);
  on_rank0([&] {
    h5_flip_in_dataset(one, "params/wte");
    h5_flip_in_dataset(two, "params/wte");
  });
  const Found f = find(dir);
  EXPECT_FALSE(f.path.has_value());
  EXPECT_CONTAINS(f.error, dir + ": no valid checkpoint to resume from (step_00000002.h5: checksum mismatch");
  EXPECT_CONTAINS(f.error, "step_00000001.h5: checksum mismatch");
  EXPECT_CONTAINS(f.error, "checkpoint.resume=none");
  EXPECT_EQ(f.error.find('\n'), std::string::npos);  // one line
  EXPECT_TRUE(fs::exists(one) && fs::exists(two));
  MPI_Barrier(MPI_COMM_WORLD);  // every rank has looked before rank 0 removes them
  // A `latest` with no checkpoint file left is no fresh start either; an empty directory is.
  on_rank0([&] { fs::remove(one), fs::remove(two); });
  EXPECT_CONTAINS(find(dir).error, "no valid checkpoint to resume from (a 'latest' record but no checkpoint file)");
  on_rank0([&] { fs::remove(dir + "/latest"); });
  const Found empty = find(dir);
  EXPECT_EQ(empty.path, std::nullopt);
  EXPECT_EQ(empty.error, "");
}

// Pruning after a restart from an older checkpoint keeps the abandoned run's larger steps (never validated by
// this run) and counts keep only among older files.
TEST(CheckpointResume, PruningLeavesOtherHistory) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "prune");
  save(dir, 2, 2), save(dir, 4, 2), save(dir, 6, 2);  // keep 2: step 2 is pruned by step 6
  EXPECT_FALSE(fs::exists(dir + "/step_00000002.h5"));
  save(dir, 1, 2), save(dir, 3, 2);  // restarted run: 1, 3 (keep 2 among steps <= 3)
  for (int64_t step : {1, 3, 4, 6}) EXPECT_TRUE(fs::exists(dir + "/step_0000000" + std::to_string(step) + ".h5")) << step;
  save(dir, 5, 2);  // 4 is older than 5 and is this run's to prune now; 1 goes as the oldest beyond keep
  for (int64_t step : {4, 5, 6}) EXPECT_TRUE(fs::exists(dir + "/step_0000000" + std::to_string(step) + ".h5")) << step;
  EXPECT_FALSE(fs::exists(dir + "/step_00000001.h5"));
  EXPECT_FALSE(fs::exists(dir + "/step_00000003.h5"));
}

// Root attributes are range-checked with the file and attribute named; a bad one also makes resume fall back.
TEST(CheckpointResume, MetadataRangeChecked) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "metarange");
  gt::CheckpointMeta m;
  m.ints["samples_done"] = -5;
  m.reals["seed"] = 2.5;
  m.strings["model"] = "gpt2 n_layer=2";
  const std::string path = save(dir, 7, 0, m);
  const gt::CheckpointMeta meta = gt::read_checkpoint_meta(MPI_COMM_WORLD, path);
  auto error = [&](const std::string& key, int64_t lo, int64_t hi) {
    try {
      gt::checkpoint_meta_int(path, meta, key, lo, hi);
    } catch (const gt::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("step", 0, 1000), "");
  EXPECT_EQ(error("step", 10, 1000), path + ": root attribute 'step' is 7, outside [10, 1000]");
  EXPECT_EQ(error("samples_done", 0, int64_t(1) << 50),
            path + ": root attribute 'samples_done' is -5, outside [0, 1125899906842624]");
  EXPECT_EQ(error("global_batch", 1, 100), path + ": root attribute 'global_batch' is missing");
  EXPECT_EQ(error("seed", 0, 100), path + ": root attribute 'seed' is a floating-point number (2.5), expected an integer");
  EXPECT_EQ(error("model", 0, 100), path + ": root attribute 'model' is a string, expected an integer");
  gt::CheckpointRequirements other;
  other.strings.push_back({"model", "gpt2 n_layer=3", "model"});
  try {
    gt::check_checkpoint_meta(path, meta, other);
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": checkpoint of another model (gpt2 n_layer=2), this run is gpt2 n_layer=3");
  }
  // Under resume=auto the same requirement skips it for an older valid one.
  gt::CheckpointMeta ok;
  ok.ints["samples_done"] = 12;
  const std::string older = save(dir, 5, 0, ok);
  on_rank0([&] { write_bytes(dir + "/latest", "step_00000007.h5\n"); });
  gt::CheckpointRequirements req;
  req.ints.push_back({"samples_done", 0, int64_t(1) << 50, ""});
  const Found f = find(dir, req);
  EXPECT_EQ(f.path, older);
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    EXPECT_CONTAINS(f.warnings, "root attribute 'samples_done' is -5");
  }
}

// A NaN with a valid checksum is an error naming the tensor on load; a state holding one is not saved.
TEST(CheckpointResume, NonFiniteRefused) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "nonfinite");
  const std::string path = save(dir, 1);
  on_rank0([&] { h5_poke(path, "params/wte", 13, INFINITY); });
  Shards s = make_shards(small_model(), Layout::Cols, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 0, false);
  gt::CheckpointMeta meta;
  try {
    gt::load_checkpoint(MPI_COMM_WORLD, path, s.list, meta);
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": dataset 'params/wte' holds a non-finite value (inf)");
  }
  Shards bad = make_shards(small_model(), Layout::Rows, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 3, true);
  bad.bufs[2][0] = NAN;  // every rank holds a piece of adam_m/h.0/attn.qkv.w
  gt::CheckpointOptions opt;
  opt.dir = dir;
  try {
    gt::save_checkpoint(MPI_COMM_WORLD, opt, 2, bad.list, {});
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_CONTAINS(e.what(), "dataset 'adam_m/h.0/attn.qkv.w' holds a non-finite value (nan); not saved");
  }
  EXPECT_FALSE(fs::exists(dir + "/step_00000002.h5"));
  EXPECT_FALSE(fs::exists(dir + "/step_00000002.h5.tmp"));
  MPI_Barrier(MPI_COMM_WORLD);
}
