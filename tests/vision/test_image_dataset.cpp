// The HDF5 image dataset: a round trip keeps every byte and label; a damaged chunk, a label out of range, a token
// dataset given in its place, and images of the wrong shape for the model are each refused with one line naming
// the file; a failed write leaves nothing behind and does not touch an existing good file.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <zlib.h>

#include <filesystem>
#include <functional>
#include <string>

#include "src/core/error.hpp"
#include "src/vision/image_dataset.hpp"
#include "src/vision/prepare_images.hpp"
#include "tests/common/expect_error.hpp"

using namespace gt::vision;

namespace {

ImageSplit split(int n, int h, int w, int c, int classes, int salt) {
  ImageSplit s{n, h, w, c, {}, {}};
  for (long i = 0; i < long(n) * h * w * c; ++i) s.pixels.push_back(std::uint8_t((i * 31 + salt) & 0xff));
  for (int i = 0; i < n; ++i) s.labels.push_back((i + salt) % classes);
  return s;
}

ImageDataset sample() {
  // 1500 training images: two checksum chunks (1024 + a partial 476)
  return {"unit", 10, split(1500, 5, 4, 2, 10, 1), split(7, 5, 4, 2, 10, 2)};
}

std::string tmp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

using gt_test::expect_error;

// Overwrites one byte of train/images in place (what a damaged disk block would do).
void poke(const std::string& path, hsize_t image) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "train/images", H5P_DEFAULT);
  hid_t fs = H5Dget_space(d);
  const hsize_t start[4] = {image, 1, 1, 0}, count[4] = {1, 1, 1, 1};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
  hid_t ms = H5Screate_simple(4, count, nullptr);
  const std::uint8_t v = 0xab ^ 0x5a;
  H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, &v);
  H5Sclose(ms), H5Sclose(fs), H5Dclose(d), H5Fclose(f);
}

}  // namespace

TEST(VisionImageDataset, RoundTripKeepsEveryByte) {
  const ImageDataset ds = sample();
  write_image_dataset(tmp("ok.h5"), ds);
  const ImageDataset back = read_image_dataset(tmp("ok.h5"));
  EXPECT_EQ(back.name, "unit");
  EXPECT_EQ(back.classes, 10);
  EXPECT_EQ(back.train.pixels, ds.train.pixels);
  EXPECT_EQ(back.train.labels, ds.train.labels);
  EXPECT_EQ(back.test.pixels, ds.test.pixels);
  EXPECT_EQ(back.test.labels, ds.test.labels);
  EXPECT_NO_THROW(check_images_fit(back, "ok.h5", 5, 4, 2, 10));
  expect_error([&] { check_images_fit(back, "ok.h5", 28, 28, 1, 10); }, "holds 5x4x2 images; the model takes 28x28x1");
  expect_error([&] { check_images_fit(back, "ok.h5", 5, 4, 2, 100); }, "has 10 classes; the model has 100");
}

TEST(VisionImageDataset, DamageTokenDatasetsAndBadLabelsAreRefused) {
  const std::string path = tmp("damaged.h5");
  write_image_dataset(path, sample());
  poke(path, 1200);  // in the second chunk
  expect_error([&] { read_image_dataset(path); }, "train/images chunk 1 (images 1024..1499) does not match");
  // a token dataset's kind
  {
    hid_t f = H5Fcreate(tmp("tokens.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "gridtrain_kind", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    const char* v = "dataset";
    H5Awrite(a, t, &v);
    H5Aclose(a), H5Sclose(sp), H5Tclose(t), H5Fclose(f);
  }
  expect_error([&] { read_image_dataset(tmp("tokens.h5")); }, "is a token dataset; a resnet model needs an image dataset");
  expect_error([&] { read_image_dataset(tmp("absent.h5")); }, "cannot open the image dataset");
  // a label out of range is refused when writing (the read-back), and nothing is left behind
  ImageDataset bad = sample();
  bad.test.labels[3] = 10;
  expect_error([&] { write_image_dataset(tmp("bad.h5"), bad); }, "test/labels[3] = 10 is outside [0, 10)");
  EXPECT_FALSE(std::filesystem::exists(tmp("bad.h5")));
  for (const auto& e : std::filesystem::directory_iterator(::testing::TempDir()))
    EXPECT_EQ(e.path().filename().string().find("bad.h5.tmp"), std::string::npos) << e.path();
  // a failed write over an existing good file leaves it as it was
  write_image_dataset(tmp("keep.h5"), sample());
  expect_error([&] { write_image_dataset(tmp("keep.h5"), bad); }, "is outside");
  EXPECT_EQ(read_image_dataset(tmp("keep.h5")).test.labels, sample().test.labels);
}

TEST(VisionImageDataset, AttributesClaimingMoreImagesThanTheFileHoldsAreRefused) {
  // The reader allocates what the attributes say before it compares the datasets with them: a damaged count or
  // height (up to 2^30 each) asked for up to 2^120 bytes, wrapped around in 64 bits. Refused before allocating.
  for (const char* attr : {"train_images", "height"}) {
    const std::string path = tmp(std::string("claims_") + attr + ".h5");
    write_image_dataset(path, sample());
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, attr, H5P_DEFAULT);
    const long long v = 1ll << 30;
    H5Awrite(a, H5T_NATIVE_LLONG, &v);
    H5Aclose(a), H5Fclose(f);
    expect_error([&] { read_image_dataset(path); }, "more than the file's");
  }
}

namespace {

void write_idx(const std::string& path, unsigned magic, const std::vector<unsigned>& dims,
               const std::vector<std::uint8_t>& data) {
  std::vector<unsigned char> v;
  v.insert(v.end(), {0, 0, 8, (unsigned char)magic});  // idx magic: 0, 0, type 8 (uint8), number of dims
  for (unsigned d : dims)
    for (int s = 24; s >= 0; s -= 8) v.push_back((d >> s) & 0xff);
  v.insert(v.end(), data.begin(), data.end());
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, v.data(), unsigned(v.size()));
  gzclose(f);
}

}  // namespace

TEST(VisionImageDataset, PrepareCommandFromIdxFiles) {
  const std::string dir = tmp("idx");
  std::filesystem::create_directories(dir);
  std::vector<std::uint8_t> px(5 * 28 * 28), lab = {0, 9, 3, 3, 1};
  for (size_t i = 0; i < px.size(); ++i) px[i] = std::uint8_t(i * 7);
  for (const char* p : {"train", "t10k"}) {
    write_idx(dir + "/" + p + "-images-idx3-ubyte.gz", 3, {5, 28, 28}, px);
    write_idx(dir + "/" + p + "-labels-idx1-ubyte.gz", 1, {5}, lab);
  }
  const std::string out = tmp("fm.h5");
  ASSERT_EQ(prepare_images_main({"--images", "fashion-mnist", "--images-dir", dir, "--out", out}), 0);
  const ImageDataset ds = read_image_dataset(out);
  EXPECT_EQ(ds.train.pixels, px);
  EXPECT_EQ(ds.test.labels, (std::vector<std::int32_t>{0, 9, 3, 3, 1}));
  EXPECT_EQ(prepare_images_main({"--images=cifar10", "--out", out}), 2);  // unknown set: usage error
  EXPECT_EQ(prepare_images_main({"--images", "fashion-mnist"}), 2);       // no --out
  // labels count differs from images: refused, and the good file from before is kept
  write_idx(dir + "/t10k-labels-idx1-ubyte.gz", 1, {4}, {0, 1, 2, 3});
  EXPECT_EQ(prepare_images_main({"--images", "fashion-mnist", "--images-dir=" + dir, "--out", out}), 1);
  EXPECT_EQ(read_image_dataset(out).test.labels, (std::vector<std::int32_t>{0, 9, 3, 3, 1}));
}
