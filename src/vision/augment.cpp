#include "src/vision/augment.hpp"

namespace gt::vision {
namespace {

// splitmix64: a counter-based generator, so a sample's draws need no state carried between samples.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void augment_image(const AugmentParams& p, bool augment, std::uint64_t epoch, std::uint64_t index, int h, int w,
                   int c, const std::uint8_t* src, float* dst) {
  int dy = 0, dx = 0;
  bool flip = false;
  if (augment) {
    const std::uint64_t r = mix(mix(p.seed ^ mix(epoch)) ^ index);
    const int span = 2 * p.pad + 1;
    dy = p.pad > 0 ? int(r % span) - p.pad : 0;
    dx = p.pad > 0 ? int((r >> 16) % span) - p.pad : 0;
    flip = p.flip && ((r >> 40) & 1);
  }
  const float inv = 1.f / (255.f * p.std), shift = p.mean / p.std;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int sy = y + dy, sx0 = x + dx, sx = flip ? w - 1 - sx0 : sx0;
      const bool inside = sy >= 0 && sy < h && sx0 >= 0 && sx0 < w;
      for (int k = 0; k < c; ++k)
        dst[(long(y) * w + x) * c + k] = inside ? src[(long(sy) * w + sx) * c + k] * inv - shift : -shift;
    }
}

}  // namespace gt::vision
