// Bad checkpoints: each defect must give a gt::Error naming the file and the problem on *every* rank (a
// rank left waiting in a collective would hang until the test's time limit), and find_latest_checkpoint
// must skip an invalid newest checkpoint.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <fstream>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/inspect.hpp"
#include "tests/io/io_test_util.hpp"

using namespace iotest;
namespace fs = std::filesystem;

namespace {

const int64_t kSeed = 77;

std::string save_good(const std::string& dir, int64_t step) {
  Shards s = make_shards(small_model(), Layout::Rows, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD),
                         kSeed + step, true);
  gt::CheckpointOptions opt;
  opt.dir = dir;
  opt.keep = 0;
  return gt::save_checkpoint(MPI_COMM_WORLD, opt, step, s.list, gt::CheckpointMeta{});
}

// Runs a damaging edit on rank 0 only (plain serial HDF5 / POSIX), then lets everyone continue.
template <class F>
void on_rank0(F&& damage) {
  if (comm_rank(MPI_COMM_WORLD) == 0) damage();
  MPI_Barrier(MPI_COMM_WORLD);
}

void flip_byte_in_dataset(const std::string& path, const std::string& name, int64_t byte) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  const haddr_t offset = H5Dget_offset(d);
  H5Dclose(d);
  H5Fclose(f);
  ASSERT_NE(offset, HADDR_UNDEF);
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(offset + byte);
  char c = 0;
  io.read(&c, 1);
  c ^= 0x10;
  io.seekp(offset + byte);
  io.write(&c, 1);
}

template <class F>
void with_file(const std::string& path, F&& edit) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  edit(f);
  H5Fclose(f);
}

// Loads with the standard model layout (or specs) and returns the error text ("" if none).
std::string load_error(const std::string& path, std::vector<Spec> specs = small_model(), Layout layout = Layout::Rows) {
  Shards s = make_shards(specs, layout, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 0, false);
  gt::CheckpointMeta meta;
  try {
    gt::load_checkpoint(MPI_COMM_WORLD, path, s.list, meta);
  } catch (const gt::Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

}  // namespace

TEST(CheckpointBad, MissingAndNotHdf5) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "nothdf5");
  EXPECT_EQ(load_error(dir + "/step_00000001.h5"), dir + "/step_00000001.h5: no such file");
  on_rank0([&] { std::ofstream(dir + "/step_00000001.h5") << "this is not HDF5\n"; });
  // HDF5's own reason follows in parentheses (here: no HDF5 signature).
  EXPECT_CONTAINS(load_error(dir + "/step_00000001.h5"), dir + "/step_00000001.h5: not a readable HDF5 file (HDF5: ");
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    EXPECT_THROW(gt::hdf5_file_kind(dir + "/step_00000001.h5"), gt::Error);
    std::ostringstream os;
    EXPECT_THROW(gt::inspect_checkpoint(dir + "/step_00000001.h5", os), gt::Error);
  }
}

TEST(CheckpointBad, Truncated) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "trunc");
  const std::string path = save_good(dir, 1);
  on_rank0([&] { fs::resize_file(path, fs::file_size(path) / 2); });
  EXPECT_CONTAINS(load_error(path), path + ": not a readable HDF5 file (HDF5: ");
}

TEST(CheckpointBad, FlippedBitInTensor) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "flip");
  const std::string path = save_good(dir, 1);
  on_rank0([&] { flip_byte_in_dataset(path, "adam_m/h.0/attn.qkv.w", 4 * 30 + 2); });
  const std::string want = path + ": checksum mismatch in dataset 'adam_m/h.0/attn.qkv.w'";
  EXPECT_EQ(load_error(path), want);                                        // writer tiling: checksum of data read
  EXPECT_EQ(load_error(path, small_model(), Layout::WholeAllWriters), want);  // re-read by rows
  try {
    gt::verify_checkpoint(MPI_COMM_WORLD, path);
    ADD_FAILURE() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_EQ(std::string(e.what()), want);
  }
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    std::ostringstream os;
    EXPECT_EQ(gt::inspect_checkpoint(path, os), 1);
    EXPECT_CONTAINS(os.str(), "adam_m/h.0/attn.qkv.w  (3,4,7)  checksum MISMATCH");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointBad, MissingDatasetAndWrongShape) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "shape");
  const std::string path = save_good(dir, 1);
  std::vector<Spec> more = small_model();
  more.push_back({"params/h.1/ln.w", {5}});
  EXPECT_EQ(load_error(path, more), path + ": dataset 'params/h.1/ln.w' is missing");
  std::vector<Spec> other = small_model();
  other[0].shape = {6, 12};  // another model's embedding
  EXPECT_EQ(load_error(path, other), path + ": dataset 'params/wte': shape (6,10) does not match the model's (6,12)");
  other = small_model();
  other[2].shape = {3, 28};
  EXPECT_EQ(load_error(path, other),
            path + ": dataset 'adam_m/h.0/attn.qkv.w': shape (3,4,7) does not match the model's (3,28)");
}

TEST(CheckpointBad, MissingAttributes) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "attr");
  const std::string a = save_good(dir, 1), b = save_good(dir, 2), c = save_good(dir, 3);
  on_rank0([&] {
    with_file(a, [](hid_t f) { H5Adelete(f, "format_version"); });
    with_file(b, [](hid_t f) {
      hid_t d = H5Dopen2(f, "params/wte", H5P_DEFAULT);
      H5Adelete(d, "checksum");
      H5Dclose(d);
    });
    with_file(c, [](hid_t f) { H5Adelete(f, "gridtrain_kind"); });
  });
  EXPECT_EQ(load_error(a), a + ": missing root attribute 'format_version'");
  EXPECT_EQ(load_error(b), b + ": dataset 'params/wte' has no 'checksum' attribute");
  EXPECT_CONTAINS(load_error(c), c + ": missing root attribute 'gridtrain_kind'");
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    EXPECT_EQ(gt::hdf5_file_kind(c), "");
  }
}

TEST(CheckpointBad, WrongDtype) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "dtype");
  const std::string path = save_good(dir, 1);
  on_rank0([&] {
    with_file(path, [](hid_t f) {
      H5Ldelete(f, "params/h.0/ln.b", H5P_DEFAULT);
      const hsize_t n = 5;
      hid_t space = H5Screate_simple(1, &n, nullptr);
      hid_t d = H5Dcreate2(f, "params/h.0/ln.b", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      const double v[5] = {1, 2, 3, 4, 5};
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
      hid_t s = H5Screate(H5S_SCALAR);
      hid_t a = H5Acreate2(d, "checksum", H5T_STD_U64LE, s, H5P_DEFAULT, H5P_DEFAULT);
      const uint64_t zero = 0;
      H5Awrite(a, H5T_NATIVE_UINT64, &zero);
      H5Aclose(a);
      H5Sclose(s);
      H5Dclose(d);
      H5Sclose(space);
    });
  });
  EXPECT_EQ(load_error(path), path + ": dataset 'params/h.0/ln.b' has dtype float64, expected float32");
}

TEST(CheckpointBad, NotACheckpoint) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "kind");
  const std::string path = dir + "/step_00000001.h5";
  on_rank0([&] {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 7);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "gridtrain_kind", t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, "tokens");
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    H5Fclose(f);
  });
  EXPECT_EQ(load_error(path), path + ": not a checkpoint (gridtrain_kind is 'tokens')");
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    EXPECT_EQ(gt::hdf5_file_kind(path), "tokens");
  }
}

TEST(CheckpointBad, FindLatestSkipsInvalidNewest) {
  const std::string dir = scratch_dir(MPI_COMM_WORLD, "skip");
  const std::string one = save_good(dir, 1), two = save_good(dir, 2), three = save_good(dir, 3);
  on_rank0([&] {
    flip_byte_in_dataset(three, "params/wte", 17);  // newest (and `latest`): bad checksum
    fs::resize_file(two, 1000);                     // next: truncated
  });
  if (comm_rank(MPI_COMM_WORLD) == 0) testing::internal::CaptureStderr();
  const std::optional<std::string> found = gt::find_latest_checkpoint(MPI_COMM_WORLD, dir);
  EXPECT_EQ(found, one);
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_CONTAINS(err, "gridtrain: warning: skipping invalid checkpoint " + three +
                             ": checksum mismatch in dataset 'params/wte'\n");
    EXPECT_CONTAINS(err, "gridtrain: warning: skipping invalid checkpoint " + two + ": not a readable HDF5 file");
  }
  // The one chosen loads and holds step 1's tensors.
  Shards s = make_shards(small_model(), Layout::Cols, comm_rank(MPI_COMM_WORLD), comm_size(MPI_COMM_WORLD), 0, false);
  gt::CheckpointMeta meta;
  gt::load_checkpoint(MPI_COMM_WORLD, *found, s.list, meta);
  EXPECT_EQ(count_wrong(s, kSeed + 1), 0);
  // None valid: an error (a fresh start would overwrite and prune them), not an empty answer.
  on_rank0([&] { fs::resize_file(one, 10); });
  if (comm_rank(MPI_COMM_WORLD) == 0) testing::internal::CaptureStderr();
  EXPECT_THROW(gt::find_latest_checkpoint(MPI_COMM_WORLD, dir), gt::Error);
  if (comm_rank(MPI_COMM_WORLD) == 0) testing::internal::GetCapturedStderr();
}
