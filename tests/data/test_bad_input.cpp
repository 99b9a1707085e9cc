// Bad dataset input: each problem is one gt::Error line that names the file and the problem, from the reader
// (DatasetFile / HDF5Source), from make_data_source (vocabulary larger than the model), and through the
// `gridtrain train` command (exit 1, exactly one `gridtrain: error:` line on stderr).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/data/data_source.hpp"
#include "src/data/dataset_file.hpp"
#include "src/io/h5_util.hpp"
#include "src/data/hdf5_source.hpp"
#include "src/data/prepare.hpp"
#include "tests/data/data_helpers.hpp"
#include "tests/data/test_util.hpp"

using namespace gt;
namespace fs = std::filesystem;

namespace {

// A valid byte-level dataset (two documents, one of them held out).
std::string valid_dataset(const std::string& dir) {
  test::write_file(dir + "/one.txt", std::string(5000, 'a') + "\n");
  test::write_file(dir + "/two.txt", "short document\n");
  PrepareOptions opt;
  opt.out = dir + "/valid.h5";
  opt.inputs = {dir + "/one.txt", dir + "/two.txt"};
  opt.progress = false;
  prepare_dataset(opt);
  return opt.out;
}

// A copy of `src` named `name`, changed by `edit` through the plain HDF5 API (file opened read-write).
std::string broken_copy(const std::string& src, const std::string& name, const std::function<void(hid_t)>& edit) {
  const std::string path = fs::path(src).parent_path().string() + "/" + name;
  fs::copy_file(src, path, fs::copy_options::overwrite_existing);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  edit(f);
  H5Fclose(f);
  return path;
}

// The writers of the dataset code (src/io/h5_util.hpp) on a deleted attribute: a value of another size or type.
void replace_attr_int(hid_t f, const char* name, int64_t value) {
  H5Adelete(f, name);
  gt::io::write_attr_int(f, name, value);
}

void replace_attr_string(hid_t f, const char* name, const char* value) {
  H5Adelete(f, name);
  gt::io::write_attr_string(f, name, value);
}

// Replaces dataset `name` by one of the same length and file type `type`, holding small values.
void replace_dataset(hid_t f, const char* name, hid_t type) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(s, &n, nullptr);
  H5Dclose(d);
  H5Sclose(s);
  H5Ldelete(f, name, H5P_DEFAULT);
  s = H5Screate_simple(1, &n, nullptr);  // fixed size (the original is extendible, which needs chunks)
  hid_t nd = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<int> v(n, 1);
  H5Dwrite(nd, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(nd);
  H5Sclose(s);
}

// `action` must throw gt::Error whose single line names `file` and contains `problem`.
void expect_error(const std::function<void()>& action, const std::string& file, const std::string& problem) {
  try {
    action();
    ADD_FAILURE() << "no error for " << file << " (expected: " << problem << ")";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(file + ": ", 0), 0u) << "does not start with the file name: " << what;
    EXPECT_NE(what.find(problem), std::string::npos) << "expected '" << problem << "' in: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "more than one line: " << what;
  }
}

void expect_open_error(const std::string& file, const std::string& problem) {
  expect_error([&] { DatasetFile f(file); }, file, problem);
  expect_error([&] { HDF5Source s(file, 16, 1); }, file, problem);
}

}  // namespace

TEST(BadInput, MissingOrNotHdf5) {
  const std::string dir = test::scratch_dir();
  expect_open_error(dir + "/nonexistent.h5", "no such dataset file");
  expect_open_error(dir, "no such dataset file");  // a directory
  test::write_file(dir + "/text.h5", "this is not HDF5\n");
  expect_open_error(dir + "/text.h5", "not an HDF5 file");
  test::write_file(dir + "/empty.h5", "");
  expect_open_error(dir + "/empty.h5", "not an HDF5 file");
}

TEST(BadInput, TruncatedFile) {
  const std::string dir = test::scratch_dir();
  const std::string valid = valid_dataset(dir);
  const auto size = fs::file_size(valid);
  for (double keep : {0.5, 0.9}) {
    const std::string path = dir + "/truncated" + std::to_string(int(keep * 100)) + ".h5";
    fs::copy_file(valid, path, fs::copy_options::overwrite_existing);
    fs::resize_file(path, uintmax_t(double(size) * keep));
    expect_open_error(path, "truncated");
  }
  const std::string last = dir + "/minus_one_byte.h5";
  fs::copy_file(valid, last, fs::copy_options::overwrite_existing);
  fs::resize_file(last, size - 1);
  expect_open_error(last, "truncated");
  DatasetFile ok(valid);  // the original still opens
  EXPECT_GT(ok.tokens(Split::Train), 0);
}

TEST(BadInput, MissingDatasetOrAttribute) {
  const std::string dir = test::scratch_dir();
  const std::string valid = valid_dataset(dir);
  for (const char* ds : {"train/tokens", "val/doc_offsets"}) {
    const std::string p = broken_copy(valid, "no_dataset.h5", [&](hid_t f) { H5Ldelete(f, ds, H5P_DEFAULT); });
    expect_open_error(p, std::string("missing dataset /") + ds);
  }
  {
    const std::string p = broken_copy(valid, "no_group.h5", [](hid_t f) { H5Ldelete(f, "val", H5P_DEFAULT); });
    expect_open_error(p, "missing dataset /val/tokens");
  }
  for (const char* attr : {"gridtrain_kind", "format_version", "tokenizer", "vocab_size", "eot_id", "source_files",
                           "source_fnv1a64", "train_tokens", "val_documents"}) {
    const std::string p = broken_copy(valid, "no_attr.h5", [&](hid_t f) { H5Adelete(f, attr); });
    expect_open_error(p, std::string("missing attribute ") + attr);
  }
}

TEST(BadInput, WrongTypesAndValues) {
  const std::string dir = test::scratch_dir();
  const std::string valid = valid_dataset(dir);
  std::string p = broken_copy(valid, "float.h5", [](hid_t f) { replace_dataset(f, "train/tokens", H5T_IEEE_F32LE); });
  expect_open_error(p, "/train/tokens has a non-integer type");
  p = broken_copy(valid, "signed.h5", [](hid_t f) { replace_dataset(f, "val/tokens", H5T_STD_I16LE); });
  expect_open_error(p, "/val/tokens must be uint8, uint16 or uint32");
  p = broken_copy(valid, "offsets32.h5", [](hid_t f) { replace_dataset(f, "train/doc_offsets", H5T_STD_I32LE); });
  expect_open_error(p, "/train/doc_offsets must be int64");
  // uint8 tokens cannot hold the ids of a vocabulary of 300
  p = broken_copy(valid, "narrow.h5", [](hid_t f) { replace_attr_int(f, "vocab_size", 300); });
  expect_open_error(p, "too narrow for vocab_size 300");
  p = broken_copy(valid, "eot.h5", [](hid_t f) { replace_attr_int(f, "eot_id", 256); });
  expect_open_error(p, "eot_id");
  p = broken_copy(valid, "version.h5", [](hid_t f) { replace_attr_int(f, "format_version", 2); });
  expect_open_error(p, "format_version 2 is not supported");
  p = broken_copy(valid, "kind.h5", [](hid_t f) { replace_attr_string(f, "gridtrain_kind", "checkpoint"); });
  expect_open_error(p, "'checkpoint', not 'dataset'");
  p = broken_copy(valid, "count.h5", [](hid_t f) { replace_attr_int(f, "train_tokens", 7); });
  expect_open_error(p, "attribute train_tokens says 7");
  p = broken_copy(valid, "vocab_string.h5", [](hid_t f) { replace_attr_string(f, "vocab_size", "256"); });
  expect_open_error(p, "vocab_size");
}

TEST(BadInput, TokenIdsBeyondTheVocabularyOnRead) {
  // a 16-bit file whose vocab_size attribute was lowered below ids it holds: opening passes (the width
  // fits), the read that meets such an id fails
  const std::string dir = test::scratch_dir();
  const std::string path = dir + "/ids.h5";
  test::write_position_dataset(path, 3000, 100);  // uint16, tokens 0..2999
  const std::string p = broken_copy(path, "lowered.h5", [](hid_t f) {
    replace_attr_int(f, "vocab_size", 1000);
    replace_attr_int(f, "eot_id", 0);
  });
  DatasetFile f(p);
  std::vector<int32_t> out(64);
  f.read_tokens(Split::Train, 0, 64, out.data());  // ids 0..63 are fine
  expect_error([&] { f.read_tokens(Split::Train, 990, 64, out.data()); }, p, "token id >= vocab_size");
}

// Replaces dataset `name` by an extendible chunked one of `n` elements of `type` that stores nothing (chunks are
// allocated when written): a file of a few KB can claim any length, as a damaged extent can.
void replace_with_unwritten(hid_t f, const char* name, hid_t type, hsize_t n) {
  H5Ldelete(f, name, H5P_DEFAULT);
  const hsize_t maxdims = H5S_UNLIMITED, chunk = 65536;
  hid_t s = H5Screate_simple(1, &n, &maxdims);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  EXPECT_GE(d, 0) << name;
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(s);
}

TEST(BadInput, ChecksumsClaimMoreThanTheFileHolds) {
  // 2^47 byte tokens in 2^31 chunks of 65536, so 2^31 checksums: 16 GiB that the reader allocated and read (fill
  // values) before it compared the claim with the file's size. Now one line, before any allocation.
  const std::string dir = test::scratch_dir();
  const std::string valid = valid_dataset(dir);
  const hsize_t tokens = hsize_t(1) << 47, chunks = hsize_t(1) << 31;
  const std::string p = broken_copy(valid, "huge.h5", [&](hid_t f) {
    replace_with_unwritten(f, "train/tokens", H5T_STD_U8LE, tokens);
    replace_attr_int(f, "train_tokens", int64_t(tokens));
    replace_with_unwritten(f, "train/token_checksums", H5T_STD_U64LE, chunks);
  });
  ASSERT_LT(fs::file_size(p), uintmax_t(1) << 20);
  expect_open_error(p, "/train/token_checksums claims 2147483648 values, more than the file's");
}

TEST(BadInput, VocabularyLargerThanTheModel) {
  const std::string dir = test::scratch_dir();
  const std::string path = dir + "/big_vocab.h5";
  test::write_position_dataset(path, 3000, 100);  // vocab_size 3000
  Config cfg;
  cfg.data.source = "hdf5";
  cfg.data.path = path;
  cfg.model.vocab_size = 256;
  cfg.model.seq_len = 16;
  expect_error([&] { make_data_source(cfg); }, path, "vocab_size 3000 is larger than model.vocab_size 256");
  cfg.model.vocab_size = 3000;
  EXPECT_EQ(make_data_source(cfg)->vocab_size(), 3000);
  cfg.model.seq_len = 5000;  // longer than the train split
  expect_error([&] { make_data_source(cfg); }, path, "fewer than one sequence");
}

TEST(BadInput, TrainCommandPrintsOneErrorLine) {
  const std::string dir = test::scratch_dir();
  const std::string big = dir + "/big_vocab.h5";
  test::write_position_dataset(big, 3000, 100);
  test::write_file(dir + "/text.h5", "not hdf5\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/nonexistent.h5", "no such dataset file"},
      {dir + "/text.h5", "not an HDF5 file"},
      {big, "larger than model.vocab_size 256"},
  };
  for (const auto& c : cases) {
    const test::ChildResult r =
        test::run_child({GT_GRIDTRAIN_BIN, "train", "--config", "tiny", "data.source=hdf5", "data.path=" + c.first,
                         "output.dir=" + dir + "/run", "output.peak_gflops=1"},
                        dir + "/out.txt", dir + "/err.txt");
    EXPECT_EQ(r.exit_code, 1) << c.first;
    const std::string err = test::read_file(dir + "/err.txt");
    const std::vector<std::string> lines = test::lines_of(err);
    ASSERT_EQ(lines.size(), 1u) << "stderr: " << err;
    EXPECT_EQ(lines[0].rfind("gridtrain: error: " + c.first + ": ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(c.second), std::string::npos) << lines[0];
  }
}
