// cuDNN's three convolution passes (src/vision/conv_cudnn.hpp) against the host loops (conv.hpp's naive backend),
// on the shapes the ResNets use: 3x3 stride 1 and 2, 1x1 stride 1 and 2, the ImageNet stem's 7x7 stride 2 on odd
// maps. Built on CUDA builds with cuDNN only; ctest label gpu1 (scripts/gpu_check.sh). Skipped where no GPU is
// visible (the CUDA build's machine).
// Tolerance: 1e-5 of the output's largest magnitude. Both sides sum fp32 products in fp32 (cuDNN with FMA math:
// no TF32, whose 10-bit mantissa would miss by ~1e-3), in different orders; over at most 7*7*8 = 392 terms of
// values in [-1, 1] the ordering differs by a few ulps of the sum (~1e-6 relative). A wrong layout (NCHW read as
// NHWC, the filter's KCRS for KRSC) or a wrong pass misses by O(1).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "src/vision/conv.hpp"
#include "src/vision/conv_cudnn.hpp"

namespace {

using gt::vision::ConvShape;

struct Device {  // one device array of n floats, filled from or read back to the host
  float* p = nullptr;
  explicit Device(const std::vector<float>& host) {
    EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Device() { cudaFree(p); }
  std::vector<float> get(size_t n) const {
    std::vector<float> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

std::vector<float> random(long n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(gen);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-30;
  for (float v : want) scale = std::max(scale, std::fabs(double(v)));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(double(got[i]) - double(want[i])), 1e-5 * scale) << what << " [" << i << "] " << got[i];
}

TEST(VisionConvCudnn, EveryPassEqualsTheHostLoops) {
  if (!gt::vision::cuda_device_present()) GTEST_SKIP() << "no CUDA device visible";
  gt::vision::set_conv_backend(gt::vision::ConvBackend::naive);
  const ConvShape shapes[] = {
      {2, 8, 8, 8, 16, 3, 3, 1, 1},   // 3x3 stride 1 (a basic block)
      {2, 7, 6, 8, 12, 3, 3, 2, 1},   // 3x3 stride 2 on odd maps
      {2, 8, 8, 16, 8, 1, 1, 1, 0},   // 1x1 (a bottleneck's reduce)
      {2, 8, 8, 8, 16, 1, 1, 2, 0},   // 1x1 stride 2 (a projection)
      {2, 11, 9, 3, 8, 7, 7, 2, 3},   // the ImageNet stem
  };
  unsigned seed = 1;
  for (const ConvShape& s : shapes) {
    SCOPED_TRACE("conv " + std::to_string(s.r) + "x" + std::to_string(s.s) + " stride " + std::to_string(s.stride));
    const std::vector<float> x = random(s.in_size(), seed++), w = random(s.weight_size(), seed++),
                             dy = random(s.out_size(), seed++);
    std::vector<float> y(size_t(s.out_size())), dx(size_t(s.in_size())), dw(size_t(s.weight_size()));
    gt::vision::conv_forward(s, x.data(), w.data(), y.data());
    gt::vision::conv_backward_data(s, dy.data(), w.data(), dx.data());
    gt::vision::conv_backward_weights(s, x.data(), dy.data(), dw.data());
    gt::vision::CudnnConv conv(s);
    // the outputs start as NaN, so a pass that wrote nothing cannot pass
    const auto nan = [](size_t n) { return std::vector<float>(n, NAN); };
    Device dx_in(x), dw_in(w), ddy(dy), dy_out(nan(y.size())), ddx(nan(dx.size())), ddw(nan(dw.size()));
    conv.forward(dx_in.p, dw_in.p, dy_out.p);
    conv.backward_data(ddy.p, dw_in.p, ddx.p);
    conv.backward_weights(dx_in.p, ddy.p, ddw.p);
    expect_close(dy_out.get(y.size()), y, "forward");
    expect_close(ddx.get(dx.size()), dx, "backward-data");
    expect_close(ddw.get(dw.size()), dw, "backward-weights");
  }
}

}  // namespace
