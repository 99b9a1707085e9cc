#pragma once
// Reader of the idx files (LeCun's MNIST format, used by Fashion-MNIST; Debian's dataset-fashion-mnist installs
// them gzip-compressed under /usr/share/datasets/fashion-mnist). Big-endian header: magic 0x00000803 for
// uint8 images (count, rows, cols), 0x00000801 for uint8 labels (count). Plain or .gz files (zlib reads both).
// Anything else - a wrong magic, a short file, trailing bytes - is a gt::Error naming the file.
#include <cstdint>
#include <string>
#include <vector>

namespace gt::vision {

struct IdxImages {
  int count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x cols, row-major (one channel)
};

IdxImages read_idx_images(const std::string& path);
std::vector<std::uint8_t> read_idx_labels(const std::string& path);

}  // namespace gt::vision
