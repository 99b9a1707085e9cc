#pragma once
// Images for the trainer (model.kind = resnet), as a DataSource: global sample s of a split maps to an image by the
// same epoch sampler as tokens (sampler.hpp: a seeded permutation per epoch, any DP layout sees the same images),
// and is written as one row of row_elems() int32 words: H*W*C normalised fp32 pixels, their bits stored in the
// words as they are (the rows pass through the prefetcher and the batch loader untouched; the ResNet stage copies
// them back into floats), then the label. Training images are augmented (random crop of a zero-padded copy and a
// horizontal flip, src/vision/augment.hpp) by (seed, epoch, image), so a resumed run sees the same pixels;
// evaluation images only normalised. Split::Val is the dataset's test split.
//   ImageFileSource       an HDF5 image dataset (src/vision/image_dataset.hpp), read whole at start
//   SyntheticImageSource  ImageNet-shaped throughput data: pixels and labels a pure function of (seed, split, index)
#include <cstdint>
#include <memory>
#include <string>

#include "src/data/data_source.hpp"
#include "src/data/sampler.hpp"
#include "src/vision/augment.hpp"
#include "src/vision/image_dataset.hpp"

namespace gt {

// The shape the model takes, and how training images are augmented.
struct ImageSpec {
  int height = 0, width = 0, channels = 0, classes = 0;
  bool augment = true;
  uint64_t seed = 0;
  int row_elems() const { return height * width * channels + 1; }
};

class ImageFileSource : public DataSource {
 public:
  // gt::Error naming the file for a missing or damaged file, a token dataset, or images or classes that do not fit
  // the model.
  ImageFileSource(const std::string& path, const ImageSpec& spec);
  void read(Split split, const int64_t* samples, int n, int32_t* rows) override;
  int row_elems() const override { return spec_.row_elems(); }
  int vocab_size() const override { return spec_.classes; }
  int seq_len() const override { return 1; }
  int64_t samples_per_epoch(Split split) const override;
  std::string describe() const override;

 private:
  std::string path_;
  ImageSpec spec_;
  vision::ImageDataset ds_;
  vision::AugmentParams aug_;  // the train split's pixel mean and deviation, the padding
  EpochSampler train_, test_;
};

class SyntheticImageSource : public DataSource {
 public:
  explicit SyntheticImageSource(const ImageSpec& spec);
  void read(Split split, const int64_t* samples, int n, int32_t* rows) override;
  int row_elems() const override { return spec_.row_elems(); }
  int vocab_size() const override { return spec_.classes; }
  int seq_len() const override { return 1; }
  int64_t samples_per_epoch(Split) const override { return int64_t(1) << 40; }
  std::string describe() const override;

 private:
  ImageSpec spec_;
  vision::AugmentParams aug_;
};

// data.source = hdf5 (data.path) or synthetic, for the model's image shape.
std::unique_ptr<DataSource> make_image_source(const Config& cfg);

}  // namespace gt
