// Image rows for the trainer (image_source.hpp).
#include "src/data/image_source.hpp"

#include <cmath>
#include <cstring>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/data/hash.hpp"

namespace gt {
namespace {

// Split streams of the epoch sampler (and of the synthetic pixels): the test split never repeats the train order.
constexpr uint64_t kTrainStream = 0x696d67747261696eull, kTestStream = 0x696d6774657374ull;

// Random crop padding: an eighth of the side (CIFAR's 4 of 32; 3 of Fashion-MNIST's 28), at least 1.
int crop_pad(int side) { return side / 8 > 0 ? side / 8 : 1; }

// One image as a row: normalised pixels (fp32 bits in the int32 words), then the label.
void write_row(const vision::AugmentParams& aug, bool augment, uint64_t epoch, uint64_t image, const ImageSpec& s,
               const uint8_t* pixels, int label, std::vector<float>& scratch, int32_t* row) {
  const size_t n = size_t(s.height) * s.width * s.channels;
  scratch.resize(n);
  vision::augment_image(aug, augment, epoch, image, s.height, s.width, s.channels, pixels, scratch.data());
  std::memcpy(row, scratch.data(), n * sizeof(float));
  row[n] = label;
}

}  // namespace

ImageFileSource::ImageFileSource(const std::string& path, const ImageSpec& spec)
    : path_(path), spec_(spec), ds_(vision::read_image_dataset(path)), train_(1, 0, 0), test_(1, 0, 0) {
  vision::check_images_fit(ds_, path, spec.height, spec.width, spec.channels, spec.classes);
  if (ds_.train.count < 1 || ds_.test.count < 1)
    throw Error(path + ": an image dataset for training needs images in both splits (train " +
                std::to_string(ds_.train.count) + ", test " + std::to_string(ds_.test.count) + ")");
  // Normalisation by the train split's own pixel statistics (of x / 255, all channels together)
  double sum = 0, sq = 0;
  for (uint8_t p : ds_.train.pixels) {
    sum += p;
    sq += double(p) * p;
  }
  const double n = double(ds_.train.pixels.size()), mean = sum / n, var = sq / n - mean * mean;
  aug_.mean = float(mean / 255.0);
  aug_.std = float(std::sqrt(var > 0 ? var : 1.0) / 255.0);
  aug_.pad = crop_pad(spec.height);
  aug_.seed = spec.seed;
  train_ = EpochSampler(ds_.train.count, spec.seed, kTrainStream);
  test_ = EpochSampler(ds_.test.count, spec.seed, kTestStream);
}

int64_t ImageFileSource::samples_per_epoch(Split split) const {
  return split == Split::Train ? ds_.train.count : ds_.test.count;
}

void ImageFileSource::read(Split split, const int64_t* samples, int n, int32_t* rows) {
  const vision::ImageSplit& s = split == Split::Train ? ds_.train : ds_.test;
  const EpochSampler& sampler = split == Split::Train ? train_ : test_;
  const size_t per = size_t(s.height) * s.width * s.channels;
  std::vector<float> scratch;
  for (int i = 0; i < n; ++i) {
    const int64_t image = sampler.sequence(samples[i]);
    const uint64_t epoch = uint64_t(samples[i] / s.count);
    write_row(aug_, spec_.augment && split == Split::Train, epoch, uint64_t(image), spec_,
              s.pixels.data() + size_t(image) * per, s.labels[size_t(image)], scratch,
              rows + size_t(i) * size_t(spec_.row_elems()));
  }
}

std::string ImageFileSource::describe() const {
  char buf[512];
  std::snprintf(buf, sizeof buf, "images %s (%s): %dx%dx%d, %d classes, train %d, test %d, pixel mean %.4f std %.4f, augment %s",
                path_.c_str(), ds_.name.c_str(), spec_.height, spec_.width, spec_.channels, spec_.classes,
                ds_.train.count, ds_.test.count, aug_.mean, aug_.std,
                spec_.augment ? ("crop pad " + std::to_string(aug_.pad) + " + flip").c_str() : "off");
  return buf;
}

SyntheticImageSource::SyntheticImageSource(const ImageSpec& spec) : spec_(spec) {
  aug_.mean = 0.5f;  // uniform pixels in [0, 255]: mean 127.5 / 255, deviation 255 / sqrt(12) / 255
  aug_.std = float(1.0 / std::sqrt(12.0));
  aug_.pad = crop_pad(spec.height);
  aug_.seed = spec.seed;
}

// Pixels and label of (split, sample) from a counter-based hash: throughput data with nothing to learn.
void SyntheticImageSource::read(Split split, const int64_t* samples, int n, int32_t* rows) {
  const size_t per = size_t(spec_.height) * spec_.width * spec_.channels;
  std::vector<uint8_t> pixels(per);
  std::vector<float> scratch;
  const uint64_t stream = split == Split::Train ? kTrainStream : kTestStream;
  for (int i = 0; i < n; ++i) {
    const uint64_t key = mix64(spec_.seed ^ mix64(stream ^ mix64(uint64_t(samples[i]))));
    for (size_t k = 0; k < per; k += 8) {
      const uint64_t bits = mix64(key + k);
      for (size_t j = 0; j < 8 && k + j < per; ++j) pixels[k + j] = uint8_t(bits >> (8 * j));
    }
    const int label = int(mix64(key ^ 0x6c6162656cull) % uint64_t(spec_.classes));
    write_row(aug_, spec_.augment && split == Split::Train, 0, uint64_t(samples[i]), spec_, pixels.data(), label,
              scratch, rows + size_t(i) * size_t(spec_.row_elems()));
  }
}

std::string SyntheticImageSource::describe() const {
  return "synthetic images " + std::to_string(spec_.height) + "x" + std::to_string(spec_.width) + "x" +
         std::to_string(spec_.channels) + ", " + std::to_string(spec_.classes) + " classes (seed " +
         std::to_string(spec_.seed) + "; random pixels and labels: throughput only)";
}

std::unique_ptr<DataSource> make_image_source(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  const ImageSpec spec{m.image_size, m.image_size, m.image_channels, m.classes, cfg.data.augment,
                       uint64_t(cfg.train.seed)};
  if (cfg.choices().data_source == DataSourceKind::Synthetic) return std::make_unique<SyntheticImageSource>(spec);
  if (cfg.data.path.empty())
    throw Error("data.path: empty; set data.path=FILE.h5 (make one with gridtrain prepare --images fashion-mnist)");
  return std::make_unique<ImageFileSource>(cfg.data.path, spec);
}

}  // namespace gt
