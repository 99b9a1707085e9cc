// bench_conv: what model.conv_algorithm = "winograd" buys per layer. For the 3x3 stride-1 convolutions of
// ResNet-50 (224x224, batch 16: 64 channels at 56x56 down to 512 at 7x7) and ResNet-20 (28x28, batch 128: 16, 32
// and 64 channels), the three passes through src/vision/conv.hpp (forward, then backward-weights and
// backward-data in one call, as the network runs them), direct and with the Winograd request alternated, so both
// see the same machine state. Winograd's times include its staging reorders. Each figure is the median of
// --repeats timed rounds after one untimed one (primitive creation, first touch).
//   bench_conv [--repeats 7] [--out bench_conv.json]
// One thread (oneDNN's OpenMP gets one unless OMP_NUM_THREADS says otherwise); pin it with taskset.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "src/core/error.hpp"
#include "src/vision/conv.hpp"

using namespace gt::vision;

namespace {

struct Layer {
  const char* model;
  ConvShape s;
};

// One round of the three passes on shape s; milliseconds.
double passes_ms(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                 const std::vector<float>& dy, std::vector<float>& y, std::vector<float>& dx, std::vector<float>& dw) {
  const auto t0 = std::chrono::steady_clock::now();
  conv_forward(s, x.data(), w.data(), y.data());
  conv_backward(s, x.data(), dy.data(), w.data(), dx.data(), dw.data());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int repeats = 7;
  std::string out = "bench_conv.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--repeats") repeats = std::max(1, std::atoi(v.c_str()));
    else if (k == "--out") out = v;
    else throw gt::Error("bench_conv: unknown option " + k);
  }
  // n, h, w, c, k, r, s, stride, pad
  const std::vector<Layer> layers = {
      {"resnet50", {16, 56, 56, 64, 64, 3, 3, 1, 1}},   {"resnet50", {16, 28, 28, 128, 128, 3, 3, 1, 1}},
      {"resnet50", {16, 14, 14, 256, 256, 3, 3, 1, 1}}, {"resnet50", {16, 7, 7, 512, 512, 3, 3, 1, 1}},
      {"resnet20", {128, 28, 28, 16, 16, 3, 3, 1, 1}},  {"resnet20", {128, 14, 14, 32, 32, 3, 3, 1, 1}},
      {"resnet20", {128, 7, 7, 64, 64, 3, 3, 1, 1}}};
  std::string json = "[";
  bool first = true;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Layer& l : layers) {
    ConvShape direct = l.s, wino = l.s;
    wino.winograd = true;
    std::vector<float> x(direct.in_size()), w(direct.weight_size()), dy(direct.out_size());
    for (auto* v : {&x, &w, &dy})
      for (float& e : *v) e = u(gen);
    std::vector<float> y(direct.out_size()), dx(direct.in_size()), dw(direct.weight_size());
    std::vector<double> td, tw;
    for (int r = 0; r <= repeats; ++r) {  // round 0: untimed
      const double a = passes_ms(direct, x, w, dy, y, dx, dw), b = passes_ms(wino, x, w, dy, y, dx, dw);
      if (r > 0) {
        td.push_back(a);
        tw.push_back(b);
      }
    }
    const double md = gt::bench::median(td), mw = gt::bench::median(tw);
    const bool used = conv_uses_winograd(wino);
    std::printf("%-8s %3d x %3dx%-3d x %3d -> %3d: direct %7.2f ms, winograd %7.2f ms (%s), %.2fx\n", l.model,
                l.s.n, l.s.h, l.s.w, l.s.c, l.s.k, md, mw, used ? "used" : "not used: direct", md / mw);
    gt::bench::append_row(json, first,
                          "{\"model\": \"%s\", \"n\": %d, \"h\": %d, \"c\": %d, \"k\": %d, \"direct_ms\": %.3f, "
                          "\"winograd_ms\": %.3f, \"winograd_used\": %s, \"speedup\": %.3f}",
                          l.model, l.s.n, l.s.h, l.s.c, l.s.k, md, mw, used ? "true" : "false", md / mw);
  }
  json += "]\n";
  gt::bench::write_text(out, json, "bench_conv");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_conv: %s\n", e.what());
  return 1;
}
