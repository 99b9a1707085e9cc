// GEMM throughput of the host backends side by side, one core: oneDNN fp32 (matmul primitive, as
// kernels.gemm=onednn runs it, and dnnl_sgemm for comparison), oneDNN bf16 (fp32 accumulation), OpenBLAS fp32
// and OpenBLAS's bf16 path (widening to fp32), at the GEMM shapes of a training step of the `small` and
// `gpt2-124m` presets and at 2048^3, next to the measured fp32 FMA and bf16 dot-product peaks of the core.
// Variants run interleaved (one repetition of each in turn) and the best of --reps counts, so a shared
// machine's load hits them alike: quote ratios, not absolute figures.
//
//   build/bench/bench_gemm [--reps 5] [--presets small,gpt2-124m] [--out runs/bench/gemm.json]
//   OPENBLAS_CORETYPE=SkylakeX build/bench/bench_gemm ...   # OpenBLAS's kernels are chosen when it loads
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#if defined(GRIDTRAIN_HAVE_ONEDNN)
#include <dnnl.h>
#endif

#include "bench/bench_util.hpp"
#include "kernels/gemm.hpp"
#include "kernels/peak_flops.hpp"

namespace {

using gt::Op;

struct Shape {
  std::string what;
  Op ta, tb;
  int M, N, K;
};

// The linear layers' three GEMMs (kernels/linear.hpp): forward out = in W^T (N,T), input gradient
// dinp = dout W (N,N), weight gradient dW = dout^T in (T,N); rows = batch x sequence.
void add_linear(std::vector<Shape>& v, const std::string& name, int rows, int in, int out) {
  v.push_back({name + " fwd", Op::N, Op::T, rows, out, in});
  v.push_back({name + " dinp", Op::N, Op::N, rows, in, out});
  v.push_back({name + " dW", Op::T, Op::N, out, in, rows});
}

std::vector<Shape> preset_shapes(const std::string& preset) {
  int rows, C, V;
  if (preset == "small") rows = 4 * 256, C = 384, V = 8192;
  else if (preset == "gpt2-124m") rows = 1 * 1024, C = 768, V = 50304;
  else throw std::runtime_error("unknown preset '" + preset + "' (small, gpt2-124m)");
  std::vector<Shape> v;
  const std::string p = preset + " ";
  add_linear(v, p + "qkv", rows, C, 3 * C);
  add_linear(v, p + "attproj", rows, C, C);
  add_linear(v, p + "fc", rows, C, 4 * C);
  add_linear(v, p + "fcproj", rows, 4 * C, C);
  add_linear(v, p + "lm_head", rows, C, V);
  return v;
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
std::vector<T> filled(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(rng));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::string presets = "small,gpt2-124m", out = "runs/bench/gemm.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--presets" && i + 1 < argc) presets = argv[++i];
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_gemm [--reps N] [--presets small,gpt2-124m] [--out FILE]\n");
      return 2;
    }
  }
  gt::gemm_set_threads(1);
  std::vector<Shape> shapes;
  for (size_t p = 0; p <= presets.size();) {
    const size_t e = std::min(presets.find(',', p), presets.size());
    if (e > p) {
      auto v = preset_shapes(presets.substr(p, e - p));
      shapes.insert(shapes.end(), v.begin(), v.end());
    }
    p = e + 1;
  }
  shapes.push_back({"square 2048^3", Op::N, Op::N, 2048, 2048, 2048});

  const std::string load0 = gt::bench::shell_line("uptime");
  const gt::PeakFlops peak = gt::measure_peak_flops();
  const std::string cpu = gt::bench::shell_line("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'");
  gt::gemm_select(gt::GemmBackend::OpenBLAS);
  const std::string blas = gt::gemm_describe();
  std::string dnn = "not compiled in";
  if (gt::onednn_compiled()) {
    gt::gemm_select(gt::GemmBackend::OneDNN);
    dnn = gt::gemm_describe();
  }
  std::printf("CPU %s | load: %s\npeak per core: fp32 %.1f GFLOP/s (%s), bf16 %.1f GFLOP/s (%s)\n%s\n%s\n",
              cpu.c_str(), load0.c_str(), peak.fp32_gflops, peak.fp32_isa, peak.bf16_gflops, peak.bf16_isa,
              blas.c_str(), dnn.c_str());

  struct Variant {
    std::string name;
    std::function<void(const Shape&)> run;
  };
  std::mt19937 rng(7);
  std::vector<float> A, B, C;
  std::vector<gt::bf16_t> Ah, Bh;
  auto gemm_f32 = [&](gt::GemmBackend b) {
    return [&, b](const Shape& s) {
      gt::gemm_select(b);
      const int lda = s.ta == Op::N ? s.K : s.M, ldb = s.tb == Op::N ? s.N : s.K;
      gt::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), s.N);
    };
  };
  auto gemm_bf16 = [&](gt::GemmBackend b) {
    return [&, b](const Shape& s) {
      gt::gemm_select(b);
      const int lda = s.ta == Op::N ? s.K : s.M, ldb = s.tb == Op::N ? s.N : s.K;
      gt::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, Ah.data(), lda, Bh.data(), ldb, 0.f, C.data(), s.N);
    };
  };
  std::vector<Variant> variants;
  if (gt::onednn_compiled()) {
    variants.push_back({"onednn_fp32", gemm_f32(gt::GemmBackend::OneDNN)});
#if defined(GRIDTRAIN_HAVE_ONEDNN)
    variants.push_back({"dnnl_sgemm_fp32", [&](const Shape& s) {
                          const int lda = s.ta == Op::N ? s.K : s.M, ldb = s.tb == Op::N ? s.N : s.K;
                          dnnl_sgemm(s.ta == Op::N ? 'N' : 'T', s.tb == Op::N ? 'N' : 'T', s.M, s.N, s.K, 1.f,
                                     A.data(), lda, B.data(), ldb, 0.f, C.data(), s.N);
                        }});
#endif
    variants.push_back({"onednn_bf16", gemm_bf16(gt::GemmBackend::OneDNN)});
  }
  variants.push_back({"openblas_fp32", gemm_f32(gt::GemmBackend::OpenBLAS)});
  variants.push_back({"openblas_bf16", gemm_bf16(gt::GemmBackend::OpenBLAS)});

  std::printf("\n%-22s %2s %5s %5s %5s", "shape", "op", "M", "N", "K");
  for (const auto& v : variants) std::printf(" %16s", v.name.c_str());
  std::printf("   (GFLOP/s, best of %d)\n", reps);
  std::string json = "{\"cpu\": \"" + gt::bench::json_escape(cpu) + "\", \"load_start\": \"" +
                     gt::bench::json_escape(load0) + "\", \"openblas\": \"" + gt::bench::json_escape(blas) +
                     "\", \"onednn\": \"" + gt::bench::json_escape(dnn) + "\", \"peak_fp32_gflops\": " +
                     std::to_string(peak.fp32_gflops) + ", \"peak_bf16_gflops\": " + std::to_string(peak.bf16_gflops) +
                     ", \"reps\": " + std::to_string(reps) + ", \"rows\": [";
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Shape& s = shapes[si];
    A = filled<float>(static_cast<size_t>(s.M) * s.K, rng);
    B = filled<float>(static_cast<size_t>(s.K) * s.N, rng);
    C.assign(static_cast<size_t>(s.M) * s.N, 0.f);
    Ah.assign(A.size(), gt::bf16_t());
    Bh.assign(B.size(), gt::bf16_t());
    for (size_t i = 0; i < A.size(); ++i) Ah[i] = gt::bf16_t(A[i]);
    for (size_t i = 0; i < B.size(); ++i) Bh[i] = gt::bf16_t(B[i]);
    std::vector<double> best(variants.size(), 1e30);
    for (auto& v : variants) v.run(s);  // warm-up: primitive creation, scratch growth
    for (int r = 0; r < reps; ++r)
      for (size_t k = 0; k < variants.size(); ++k) best[k] = std::min(best[k], seconds([&] { variants[k].run(s); }));
    const double flops = 2.0 * s.M * static_cast<double>(s.N) * s.K;
    std::printf("%-22s %c%c %5d %5d %5d", s.what.c_str(), s.ta == Op::N ? 'N' : 'T', s.tb == Op::N ? 'N' : 'T', s.M,
                s.N, s.K);
    json += std::string(si ? ", " : "") + "{\"shape\": \"" + s.what + "\", \"M\": " + std::to_string(s.M) +
            ", \"N\": " + std::to_string(s.N) + ", \"K\": " + std::to_string(s.K) + ", \"gflops\": {";
    for (size_t k = 0; k < variants.size(); ++k) {
      const double g = flops / best[k] * 1e-9;
      std::printf(" %16.1f", g);
      json += std::string(k ? ", " : "") + "\"" + variants[k].name + "\": " + std::to_string(g);
    }
    std::printf("\n");
    json += "}}";
  }
  const std::string load1 = gt::bench::shell_line("uptime");
  std::printf("load at end: %s\n", load1.c_str());
  json += "], \"load_end\": \"" + gt::bench::json_escape(load1) + "\"}\n";
  std::filesystem::path op(out);
  if (op.has_parent_path()) std::filesystem::create_directories(op.parent_path());
  std::ofstream(out) << json;
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
