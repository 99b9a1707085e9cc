#pragma once
// Training augmentation for small images: a random crop of the zero-padded image (pad pixels on each side) and a
// random horizontal flip, then normalisation to (x / 255 - mean) / std. The random choices are a pure function of
// (seed, epoch, sample index), so a resumed run, or a different number of ranks, sees the same images.
#include <cstdint>

namespace gt::vision {

struct AugmentParams {
  int pad = 2;         // 0 disables the crop
  bool flip = true;
  float mean = 0.286f, std = 0.353f;  // Fashion-MNIST's training-set pixel mean and standard deviation (of x/255)
  std::uint64_t seed = 1;
};

// src: h x w x c uint8; dst: h x w x c fp32. augment=false only normalises (evaluation).
void augment_image(const AugmentParams& p, bool augment, std::uint64_t epoch, std::uint64_t index, int h, int w,
                   int c, const std::uint8_t* src, float* dst);

}  // namespace gt::vision
