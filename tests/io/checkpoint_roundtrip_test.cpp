// Round trips across decompositions: a checkpoint written by one layout of ranks is read back by others
// and must give back every element of the seeded reference tensors.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "tests/io/io_test_util.hpp"

using namespace iotest;

namespace {

// Sub-communicator of the first n ranks of world (MPI_COMM_NULL on the others), freed when it goes out of scope.
class FirstRanks {
 public:
  explicit FirstRanks(int n) {
    const int rank = comm_rank(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c_);
  }
  ~FirstRanks() {
    if (c_ != MPI_COMM_NULL) MPI_Comm_free(&c_);
  }
  FirstRanks(const FirstRanks&) = delete;
  FirstRanks& operator=(const FirstRanks&) = delete;
  operator MPI_Comm() const { return c_; }  // NOLINT: used where the communicator is

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

// Tensors of at least this many bytes go through collective MPI-IO, the rest independent (see
// CheckpointOptions); the default is far above these test tensors, so the tests also run with 0 and a mix.
int64_t g_collective_min = gt::CheckpointOptions{}.collective_min_bytes;

void write_with(MPI_Comm comm, const std::string& dir, Layout layout, int64_t step, uint64_t seed) {
  if (comm == MPI_COMM_NULL) return;
  Shards s = make_shards(small_model(), layout, comm_rank(comm), comm_size(comm), seed, true);
  gt::CheckpointOptions opt;
  opt.dir = dir;
  opt.collective_min_bytes = g_collective_min;
  gt::save_checkpoint(comm, opt, step, s.list, gt::CheckpointMeta{});
}

// Loads with a layout and returns the number of wrong elements on this rank (0 on ranks outside comm).
int64_t read_with(MPI_Comm comm, const std::string& path, Layout layout, uint64_t seed) {
  if (comm == MPI_COMM_NULL) return 0;
  Shards s = make_shards(small_model(), layout, comm_rank(comm), comm_size(comm), seed, false);
  gt::CheckpointMeta meta;
  gt::CheckpointOptions opt;
  opt.collective_min_bytes = g_collective_min;
  gt::load_checkpoint(comm, path, s.list, meta, opt);
  EXPECT_EQ(meta.ints.at("step"), 7);
  return count_wrong(s, seed);
}

std::string path_of(const std::string& dir) { return dir + "/step_00000007.h5"; }

}  // namespace

TEST(CheckpointRoundTrip, WorldRowsReadByHalfColumnsAndOneRank) {
  const int world = comm_size(MPI_COMM_WORLD);
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "rows");
  write_with(MPI_COMM_WORLD, dir, Layout::Rows, 7, 11);
  const FirstRanks half(std::max(1, world / 2)), one(1);
  EXPECT_EQ(read_with(half, path_of(dir), Layout::Cols, 11), 0);
  EXPECT_EQ(read_with(one, path_of(dir), Layout::WholeAllWriters, 11), 0);
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::TpDp, 11), 0);
}

// The same round trips with every tensor collective, and with a mix (wte 240 B and qkv 336 B collective,
// the two small ones independent), written with one choice and read with another.
// ZeRO's shards: flat ranges cut mid-row (several boxes per rank and tensor, 3-d tensors included) written by
// every replica, read back by whole-tensor and row layouts, and a row-written file read by flat ranges.
TEST(CheckpointRoundTrip, FlatRangesCutMidRow) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "flat");
  for (int64_t min : {int64_t(0), int64_t(1) << 40}) {  // collective and independent transfers
    g_collective_min = min;
    write_with(MPI_COMM_WORLD, dir, Layout::TpZero, 7, 17);
    const FirstRanks one(1);
    EXPECT_EQ(read_with(one, path_of(dir), Layout::WholeAllWriters, 17), 0);
    EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::Rows, 17), 0);
    write_with(MPI_COMM_WORLD, dir, Layout::Cols, 7, 18);
    EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::TpZero, 18), 0);
  }
  g_collective_min = gt::CheckpointOptions{}.collective_min_bytes;
}

TEST(CheckpointRoundTrip, CollectiveAndIndependentTransfers) {
  const int world = comm_size(MPI_COMM_WORLD);
  const int64_t saved = g_collective_min;
  const int64_t choices[][2] = {{0, 0}, {0, INT64_MAX}, {200, 0}, {200, INT64_MAX}, {INT64_MAX, 200}};
  int round = 0;
  for (const auto& c : choices) {
    const std::string dir = scratch_dir(MPI_COMM_WORLD, "coll" + std::to_string(round++));
    g_collective_min = c[0];
    write_with(MPI_COMM_WORLD, dir, Layout::Rows, 7, 21);
    g_collective_min = c[1];
    const FirstRanks half(std::max(1, world / 2));
    EXPECT_EQ(read_with(half, path_of(dir), Layout::Cols, 21), 0) << "write min " << c[0] << " read min " << c[1];
    EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::TpDp, 21), 0);
  }
  g_collective_min = saved;
}

TEST(CheckpointRoundTrip, TwoRanksReadByOne) {
  if (comm_size(MPI_COMM_WORLD) < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "two");
  const FirstRanks two(2), one(1);
  write_with(two, dir, Layout::Rows, 7, 12);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(read_with(one, path_of(dir), Layout::WholeWriter0, 12), 0);
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::Rows, 12), 0);
}

// Replicas (writer=false) must not be written twice, and every layout reads the file back.
TEST(CheckpointRoundTrip, ReplicasWrittenOnce) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "replica");
  write_with(MPI_COMM_WORLD, dir, Layout::TpDp, 7, 13);
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::Rows, 13), 0);
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::WholeWriter0, 13), 0);
  // All ranks read everything and all claim to be writers: not a tiling, so the checksums are re-read.
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::WholeAllWriters, 13), 0);
}

// The file is plain HDF5: a serial reader without gridtrain sees global tensors, the documented checksum
// and the root attributes.
TEST(CheckpointRoundTrip, FileReadableWithoutGridtrain) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "plain");
  write_with(MPI_COMM_WORLD, dir, Layout::Cols, 7, 14);
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    hid_t f = H5Fopen(path_of(dir).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    for (const Spec& sp : small_model()) {
      hid_t d = H5Dopen2(f, sp.name.c_str(), H5P_DEFAULT);
      ASSERT_GE(d, 0) << sp.name;
      hid_t space = H5Dget_space(d);
      std::vector<hsize_t> dims(H5Sget_simple_extent_ndims(space));
      H5Sget_simple_extent_dims(space, dims.data(), nullptr);
      EXPECT_EQ(std::vector<int64_t>(dims.begin(), dims.end()), sp.shape) << sp.name;
      const std::vector<float> want = global_tensor(sp.name, sp.shape, 14);
      std::vector<float> got(want.size());
      H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got.data());
      EXPECT_EQ(got, want) << sp.name;
      uint64_t sum = 0;
      hid_t a = H5Aopen(d, "checksum", H5P_DEFAULT);
      H5Aread(a, H5T_NATIVE_UINT64, &sum);
      EXPECT_EQ(sum, reference_checksum(want)) << sp.name;
      H5Aclose(a);
      H5Sclose(space);
      H5Dclose(d);
    }
    int64_t version = 0;
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &version);
    EXPECT_EQ(version, gt::kCheckpointFormatVersion);
    H5Aclose(a);
    H5Fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A pipeline stage lists only its own tensors; the union is still written and every tensor reads back.
TEST(CheckpointRoundTrip, RanksHoldingDifferentTensors) {
  const int rank = comm_rank(MPI_COMM_WORLD), size = comm_size(MPI_COMM_WORLD);
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "stages");
  std::vector<Spec> all = small_model(), mine;
  for (size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i) % size == rank) mine.push_back(all[i]);
  Shards s = make_shards(mine, Layout::WholeAllWriters, 0, 1, 15, true);
  gt::CheckpointOptions opt;
  opt.dir = dir;
  gt::save_checkpoint(MPI_COMM_WORLD, opt, 7, s.list, gt::CheckpointMeta{});
  EXPECT_EQ(read_with(MPI_COMM_WORLD, path_of(dir), Layout::Rows, 15), 0);
}

// Writers that leave holes or overlap are refused on every rank, before any file is created.
TEST(CheckpointRoundTrip, BadWriterLayoutRefused) {
  const int rank = comm_rank(MPI_COMM_WORLD), size = comm_size(MPI_COMM_WORLD);
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "badlayout");
  gt::CheckpointOptions opt;
  opt.dir = dir;
  Shards none = make_shards(small_model(), Layout::WholeWriter0, rank, size, 16, true);
  for (auto& t : none.list) t.writer = false;
  try {
    gt::save_checkpoint(MPI_COMM_WORLD, opt, 7, none.list, gt::CheckpointMeta{});
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cover 0 of"), std::string::npos) << e.what();
  }
  if (size >= 2) {
    Shards both = make_shards(small_model(), Layout::WholeAllWriters, rank, size, 16, true);
    try {
      gt::save_checkpoint(MPI_COMM_WORLD, opt, 7, both.list, gt::CheckpointMeta{});
      ADD_FAILURE() << "no error";
    } catch (const gt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("cover"), std::string::npos) << e.what();
    }
    // Ranks that disagree on a global shape.
    Shards rows = make_shards(small_model(), Layout::Rows, rank, size, 16, true);
    if (rank == 1) rows.list[0].global_shape = {7, 10};
    EXPECT_THROW(gt::save_checkpoint(MPI_COMM_WORLD, opt, 7, rows.list, gt::CheckpointMeta{}), gt::Error);
  }
  EXPECT_FALSE(std::filesystem::exists(path_of(dir)));
  EXPECT_FALSE(std::filesystem::exists(path_of(dir) + ".tmp"));
}
