// The idx reader (Fashion-MNIST's file format) on files written here, damaged ones refused with a line naming the
// problem; and the augmentation: a pure function of (seed, epoch, index), each output a shifted and possibly
// mirrored copy of the input (checked against every allowed shift), normalisation exact.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/vision/augment.hpp"
#include "src/vision/idx_reader.hpp"
#include "tests/common/expect_error.hpp"

using namespace gt::vision;

namespace {

void be32(std::vector<unsigned char>& v, unsigned x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back((x >> s) & 0xff);
}

std::string write_gz(const std::string& name, const std::vector<unsigned char>& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), unsigned(bytes.size()));
  gzclose(f);
  return path;
}

std::vector<unsigned char> image_file(int n, int r, int c) {
  std::vector<unsigned char> v;
  be32(v, 0x803);
  be32(v, n);
  be32(v, r);
  be32(v, c);
  for (int i = 0; i < n * r * c; ++i) v.push_back((i * 37) & 0xff);
  return v;
}

using gt_test::expect_error;

}  // namespace

TEST(VisionIdx, ReadsImagesAndLabelsAndRefusesDamagedFiles) {
  const auto img = read_idx_images(write_gz("img.gz", image_file(3, 4, 5)));
  EXPECT_EQ(img.count, 3);
  EXPECT_EQ(img.rows, 4);
  EXPECT_EQ(img.cols, 5);
  ASSERT_EQ(img.pixels.size(), 60u);
  for (int i = 0; i < 60; ++i) ASSERT_EQ(img.pixels[i], (i * 37) & 0xff);
  std::vector<unsigned char> lab;
  be32(lab, 0x801);
  be32(lab, 4);
  for (unsigned char x : {9, 0, 3, 7}) lab.push_back(x);
  const std::string lab_path = write_gz("lab.gz", lab);
  EXPECT_EQ(read_idx_labels(lab_path), (std::vector<std::uint8_t>{9, 0, 3, 7}));
  expect_error([&] { read_idx_images(lab_path); }, "not an idx image file");
  auto cut = image_file(3, 4, 5);
  cut.resize(cut.size() - 1);
  expect_error([&] { read_idx_images(write_gz("cut.gz", cut)); }, "truncated");
  auto extra = image_file(3, 4, 5);
  extra.push_back(1);
  expect_error([&] { read_idx_images(write_gz("extra.gz", extra)); }, "bytes after its data");
  expect_error([&] { read_idx_images(::testing::TempDir() + "/absent.gz"); }, "cannot open");
}

TEST(VisionAugment, DeterministicShiftedOrMirroredCopiesAndExactNormalisation) {
  const int h = 6, w = 5;
  std::vector<std::uint8_t> src(h * w);
  for (int i = 0; i < h * w; ++i) src[i] = std::uint8_t(10 + 7 * i);  // all distinct, none zero
  AugmentParams p;
  p.pad = 2;
  const float bg = -p.mean / p.std;  // a padded pixel (0) after normalisation
  auto norm = [&](int v) { return float(v) * (1.f / (255.f * p.std)) - p.mean / p.std; };
  std::vector<float> a(h * w), b(h * w);
  augment_image(p, false, 0, 0, h, w, 1, src.data(), a.data());
  for (int i = 0; i < h * w; ++i) ASSERT_EQ(a[i], norm(src[i]));  // the same expression: bitwise
  int differing = 0, flipped = 0;
  for (std::uint64_t idx = 0; idx < 40; ++idx) {
    augment_image(p, true, 1, idx, h, w, 1, src.data(), a.data());
    augment_image(p, true, 1, idx, h, w, 1, src.data(), b.data());
    ASSERT_EQ(a, b) << "not a function of (seed, epoch, index)";
    bool found = false;  // which (dy, dx, flip) produced it: exactly one must
    for (int dy = -2; dy <= 2 && !found; ++dy)
      for (int dx = -2; dx <= 2 && !found; ++dx)
        for (int f = 0; f < 2 && !found; ++f) {
          bool ok = true;
          for (int y = 0; y < h && ok; ++y)
            for (int x = 0; x < w && ok; ++x) {
              const int sy = y + dy, sx0 = x + dx, sx = f ? w - 1 - sx0 : sx0;
              const bool in = sy >= 0 && sy < h && sx0 >= 0 && sx0 < w;
              ok = a[y * w + x] == (in ? norm(src[sy * w + sx]) : bg);
            }
          if (ok) {
            found = true;
            differing += (dy != 0 || dx != 0 || f);
            flipped += f;
          }
        }
    ASSERT_TRUE(found) << "sample " << idx << " is not a shifted/mirrored copy";
  }
  // 40 draws over 50 equally likely choices: identity for all of them, or never a flip, means no randomness
  EXPECT_GT(differing, 30);
  EXPECT_GT(flipped, 5);
  EXPECT_LT(flipped, 35);
}
