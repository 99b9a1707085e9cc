#pragma once
// The HDF5 image dataset (issue 21), the image counterpart of the token dataset (src/data/dataset_format.hpp):
//   /train/images           uint8 N x H x W x C, chunked by kImageChunk images
//   /train/labels           int32 N, each in [0, classes)
//   /train/image_checksums  uint64: FNV-1a 64 of each kImageChunk images' bytes (the last chunk may be partial)
//   /test/...               the same for the test split
//   root attributes         gridtrain_kind = "image_dataset", format_version, name, height, width, channels,
//                           classes, train_images, test_images
// The writer goes through FILE.tmp.<pid> and renames only what reads back, so a failed prepare leaves nothing
// that looks valid and never replaces a good file with a bad one. The reader refuses a token dataset, a damaged
// chunk, labels out of range and shapes that disagree with the attributes, each with one line naming the file.
#include <cstdint>
#include <string>
#include <vector>

namespace gt::vision {

constexpr int64_t kImageDatasetVersion = 1;
constexpr int64_t kImageChunk = 1024;

struct ImageSplit {
  int count = 0, height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> pixels;  // count x height x width x channels
  std::vector<std::int32_t> labels;  // count
};

struct ImageDataset {
  std::string name;
  int classes = 0;
  ImageSplit train, test;
};

void write_image_dataset(const std::string& path, const ImageDataset& ds);
ImageDataset read_image_dataset(const std::string& path);

// gt::Error when the dataset's images are not what the model takes ("... holds 28x28x1 images; the model takes
// 32x32x3") or its classes differ from the model's.
void check_images_fit(const ImageDataset& ds, const std::string& path, int height, int width, int channels,
                      int classes);

}  // namespace gt::vision
