// Micro-benchmark of the compute kernels at the `small` preset shapes (B=4, T=256, C=384, NH=6, V=8192),
// float, one rank, BLAS on one thread (as in training: one rank drives one core).
//
// Rerun on an idle machine:
//   cmake --build build-kernels --target bench_kernels
//   OPENBLAS_NUM_THREADS=1 ./build-kernels/bench/bench_kernels --reps 50 --out runs/bench/kernels_idle.json
// On AVX-512 AMD CPUs also try OPENBLAS_CORETYPE=SkylakeX (OpenBLAS 0.3.21 picks its AVX2 kernels there);
// the chosen BLAS core is printed and stored.
// Options: --reps N (timed repetitions per kernel, default 20; the minimum and the median are reported),
//          --out FILE (default runs/bench/kernels.json), --B --T --C --NH --V to change the shapes,
//          --layers L (default 6) for the estimated step time (sum of the kernel minima of one step).
// The machine load (`uptime`) at start and end is printed and stored with the figures, because a shared
// machine makes every number here a lower bound on what the kernel can do.
// GB/s counts the bytes a kernel must move at least (each input read once, each output written once);
// GFLOP/s counts 2 flops per multiply-add of the mathematically needed products (the causal half only for
// attention).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "kernels/kernels.hpp"
#include "src/core/error.hpp"

namespace {

using gt::bench::json_escape;
using gt::bench::shell_line;

struct Result {
  std::string kernel, shape;
  double ms_min, ms_median, gbps, gflops;
};



class Bench {
 public:
  explicit Bench(int reps) : reps_(reps) {}

  // setup runs before every repetition (untimed: restores inputs that a kernel overwrites)
  void run(const std::string& kernel, const std::string& shape, double bytes, double flops,
           const std::function<void()>& body, const std::function<void()>& setup = nullptr) {
    std::vector<double> ms;
    for (int r = 0; r < reps_ + 1; ++r) {
      if (setup) setup();
      Kokkos::fence();
      const auto t0 = std::chrono::steady_clock::now();
      body();
      Kokkos::fence();
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());  // r=0 warms up
    }
    std::sort(ms.begin(), ms.end());
    Result res{kernel, shape, ms.front(), ms[ms.size() / 2], 0.0, 0.0};
    res.gbps = bytes > 0 ? bytes / (res.ms_min * 1e-3) / 1e9 : 0.0;
    res.gflops = flops > 0 ? flops / (res.ms_min * 1e-3) / 1e9 : 0.0;
    std::printf("%-26s %-22s %9.3f %9.3f %9.2f %9.2f\n", kernel.c_str(), shape.c_str(), res.ms_min, res.ms_median,
                res.gbps, res.gflops);
    std::fflush(stdout);
    results_.push_back(res);
  }
  const std::vector<Result>& results() const { return results_; }

 private:
  int reps_;
  std::vector<Result> results_;
};

std::vector<float> randv(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::string dims(std::initializer_list<long> d) {
  std::string s = "(";
  for (long x : d) s += (s.size() > 1 ? "," : "") + std::to_string(x);
  return s + ")";
}

int parse_int(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x <= 0) throw gt::Error("bench_kernels: " + flag + " needs a positive integer");
  return static_cast<int>(x);
}

int run(int argc, char** argv) {
  int reps = 20, B = 4, T = 256, C = 384, NH = 6, V = 8192, layers = 6;
  std::string out = "runs/bench/kernels.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) throw gt::Error("bench_kernels: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--reps") reps = parse_int(a, next());
    else if (a == "--out") out = next();
    else if (a == "--B") B = parse_int(a, next());
    else if (a == "--T") T = parse_int(a, next());
    else if (a == "--C") C = parse_int(a, next());
    else if (a == "--NH") NH = parse_int(a, next());
    else if (a == "--V") V = parse_int(a, next());
    else if (a == "--layers") layers = parse_int(a, next());
    else throw gt::Error("bench_kernels: unknown option " + a + " (see the top of bench_kernels.cpp)");
  }
  if (C % NH != 0) throw gt::Error("bench_kernels: C must be a multiple of NH");
  gt::gemm_set_threads(1);
  const std::string load_start = shell_line("uptime");
  const std::string blas_core = gt::blas_core_name();
  std::printf("bench_kernels: B=%d T=%d C=%d NH=%d V=%d float, reps=%d, BLAS core %s\nload at start: %s\n", B, T, C,
              NH, V, reps, blas_core.c_str(), load_start.c_str());
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && (blas_core == "Haswell" || blas_core == "Zen"))
    std::printf("note: this CPU has AVX-512 but OpenBLAS chose %s kernels; OPENBLAS_CORETYPE=SkylakeX is ~2x faster "
                "for sgemm here\n",
                blas_core.c_str());
#endif
  std::printf("%-26s %-22s %9s %9s %9s %9s\n", "kernel", "shape", "ms_min", "ms_med", "GB/s", "GFLOP/s");

  const long BT = static_cast<long>(B) * T, hd = C / NH;
  const double f = sizeof(float);
  std::mt19937 rng(1);
  Bench bench(reps);

  // embedding
  std::vector<int32_t> tok(BT);
  for (auto& t : tok) t = static_cast<int32_t>(rng() % V);
  auto wte = randv(rng, static_cast<size_t>(V) * C), wpe = randv(rng, static_cast<size_t>(T) * C);
  std::vector<float> x(BT * C), dx(BT * C), dwte(wte.size()), dwpe(wpe.size());
  bench.run("embedding_forward", dims({BT, C}), f * (2.0 * BT * C + T * C), 0,
            [&] { gt::embedding_forward(x.data(), tok.data(), wte.data(), wpe.data(), BT, T, C, 0, V); });
  auto dout = randv(rng, BT * C);
  bench.run("embedding_backward", dims({BT, C}), f * (3.0 * BT * C + 2.0 * T * C), 0,
            [&] { gt::embedding_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), BT, T, C, 0, V); });

  // layernorm
  auto w = randv(rng, C), bvec = randv(rng, C);
  std::vector<float> ln(BT * C), mean(BT), rstd(BT), dw(C), db(C), part(gt::colsum_partials_elems(BT, 4L * C));
  auto xin = randv(rng, BT * C);
  bench.run("layernorm_forward", dims({BT, C}), f * 2.0 * BT * C, 0, [&] {
    gt::layernorm_forward(ln.data(), mean.data(), rstd.data(), xin.data(), w.data(), bvec.data(), BT, C);
  });
  bench.run("layernorm_backward", dims({BT, C}), f * 4.0 * BT * C, 0, [&] {
    gt::layernorm_backward(dx.data(), dw.data(), db.data(), part.data(), dout.data(), xin.data(), w.data(), mean.data(),
                           rstd.data(), BT, C);
  });

  // linear layers of one block, and the tied LM head
  struct Lin { const char* name; long in, out; };
  for (Lin l : {Lin{"qkv", C, 3L * C}, Lin{"attn_proj", C, C}, Lin{"fc", C, 4L * C}, Lin{"fc_proj", 4L * C, C},
                Lin{"lm_head", C, V}}) {
    auto li = randv(rng, BT * l.in), lw = randv(rng, l.out * l.in), lb = randv(rng, l.out);
    std::vector<float> lo(BT * l.out), ldi(BT * l.in), ldw(l.out * l.in), ldb(l.out);
    auto ldo = randv(rng, BT * l.out);
    const double fl = 2.0 * BT * l.in * l.out;
    const float* bias = std::string(l.name) == "lm_head" ? nullptr : lb.data();
    bench.run(std::string("linear_forward_") + l.name, dims({BT, l.in, l.out}), 0, fl,
              [&] { gt::linear_forward(lo.data(), li.data(), lw.data(), bias, BT, l.in, l.out); });
    float* dbias = bias ? ldb.data() : nullptr;
    bench.run(std::string("linear_backward_") + l.name, dims({BT, l.in, l.out}), 0, 2 * fl, [&] {
      gt::linear_backward(ldi.data(), ldw.data(), dbias, part.data(), ldo.data(), li.data(), lw.data(), BT, l.in, l.out);
    });
  }

  // attention
  auto qkv = randv(rng, BT * 3 * C);
  std::vector<float> att(static_cast<size_t>(B) * NH * T * T), ao(BT * C), dqkv(BT * 3 * C), scratch(gt::attention_scratch_elems(NH, T));
  const double causal_pairs = static_cast<double>(B) * NH * T * (T + 1) / 2.0;
  bench.run("attention_forward", dims({B, T, NH, hd}), 0, causal_pairs * hd * 2 * 2,
            [&] { gt::attention_forward(ao.data(), att.data(), qkv.data(), B, T, NH, static_cast<int>(hd)); });
  bench.run("attention_backward", dims({B, T, NH, hd}), 0, causal_pairs * hd * 2 * 4, [&] {
    gt::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, NH,
                           static_cast<int>(hd));
  });

  // GELU on the MLP activation
  const long NG = BT * 4 * C;
  auto gin = randv(rng, NG, -4.0f, 4.0f), gdo = randv(rng, NG);
  std::vector<float> gout(NG), gdi(NG);
  bench.run("gelu_forward", dims({NG}), f * 2.0 * NG, 0, [&] { gt::gelu_forward(gout.data(), gin.data(), NG); });
  bench.run("gelu_backward", dims({NG}), f * 3.0 * NG, 0,
            [&] { gt::gelu_backward(gdi.data(), gin.data(), gdo.data(), NG); });

  // elementwise
  const long NE = BT * C;
  bench.run("residual_forward", dims({NE}), f * 3.0 * NE, 0,
            [&] { gt::residual_forward(x.data(), xin.data(), dout.data(), NE); });
  bench.run("add_inplace", dims({NE}), f * 3.0 * NE, 0, [&] { gt::add_inplace(dx.data(), dout.data(), NE); });

  // cross-entropy over the full vocabulary (one rank)
  auto logits0 = randv(rng, BT * V, -5.0f, 5.0f);
  std::vector<float> logits = logits0, rowmax(BT), sumexp(BT), tlogit(BT), loss(BT);
  std::vector<int32_t> tgt(BT);
  for (auto& t : tgt) t = static_cast<int32_t>(rng() % V);
  const double lbytes = f * static_cast<double>(BT) * V;
  bench.run("ce_row_max", dims({BT, V}), lbytes, 0, [&] { gt::ce_row_max(rowmax.data(), logits.data(), BT, V); });
  bench.run("ce_row_sumexp", dims({BT, V}), lbytes, 0, [&] {
    gt::ce_row_sumexp(sumexp.data(), tlogit.data(), logits.data(), rowmax.data(), tgt.data(), BT, V, 0);
  });
  gt::ce_loss(loss.data(), sumexp.data(), rowmax.data(), tlogit.data(), BT);
  bench.run(
      "ce_backward_inplace", dims({BT, V}), 2 * lbytes, 0,
      [&] { gt::ce_backward_inplace(logits.data(), rowmax.data(), sumexp.data(), tgt.data(), BT, V, 0, 1.0f / BT); },
      [&] { std::copy(logits0.begin(), logits0.end(), logits.begin()); });

  // optimizer over a parameter count of the order of the small model's
  const long NP = 8L * 1000 * 1000;
  auto p = randv(rng, NP), g = randv(rng, NP), m = randv(rng, NP, -0.01f, 0.01f), v = randv(rng, NP, 0.0f, 1e-4f);
  int step = 0;
  bench.run("adamw_update", dims({NP}), f * 7.0 * NP, 0, [&] {
    gt::adamw_update(p.data(), g.data(), m.data(), v.data(), NP, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, ++step, 1.0f);
  });
  double sink = 0.0;
  bench.run("sum_squares", dims({NP}), f * 1.0 * NP, 0, [&] { sink += gt::sum_squares(g.data(), NP); });

  // the exp itself: fast_expf vs std::exp over 4M values (GB/s here is values/ns * 4 bytes read)
  const long NX = 4L * 1024 * 1024;
  auto ex = randv(rng, NX, -20.0f, 20.0f);
  std::vector<float> ey(NX);
  bench.run("fast_expf_loop", dims({NX}), f * 2.0 * NX, 0, [&] {
    for (long i = 0; i < NX; ++i) ey[i] = gt::fast_expf(ex[i]);
  });
  bench.run("std_expf_loop", dims({NX}), f * 2.0 * NX, 0, [&] {
    for (long i = 0; i < NX; ++i) ey[i] = std::exp(ex[i]);
  });

  // Sum of kernel minima for one single-rank training step of a GPT with `layers` blocks at these shapes
  // (no communication, no data loading, no framework overhead): a floor for the trainer's step time.
  auto ms_of = [&](const std::string& k) {
    for (const auto& r : bench.results())
      if (r.kernel == k) return r.ms_min;
    throw gt::Error("bench_kernels: no result for " + k);
  };
  const double per_layer =
      2 * (ms_of("layernorm_forward") + ms_of("layernorm_backward")) + ms_of("attention_forward") +
      ms_of("attention_backward") + ms_of("gelu_forward") + ms_of("gelu_backward") +
      2 * (ms_of("residual_forward") + ms_of("add_inplace"));
  double linear_per_layer = 0.0;
  for (const char* l : {"qkv", "attn_proj", "fc", "fc_proj"})
    linear_per_layer += ms_of(std::string("linear_forward_") + l) + ms_of(std::string("linear_backward_") + l);
  const double n_params = double(V) * C + double(T) * C + layers * (12.0 * C * C + 13.0 * C) + 2.0 * C;
  const double head = ms_of("embedding_forward") + ms_of("embedding_backward") + ms_of("layernorm_forward") +
                      ms_of("layernorm_backward") + ms_of("linear_forward_lm_head") +
                      ms_of("linear_backward_lm_head") + ms_of("ce_row_max") + ms_of("ce_row_sumexp") +
                      ms_of("ce_backward_inplace");
  const double optim = (ms_of("adamw_update") + ms_of("sum_squares")) * n_params / double(NP);
  const double step_ms = layers * (per_layer + linear_per_layer) + head + optim;
  std::printf("estimated step (%d layers, %.1fM params, sum of kernel minima): %.1f ms = layers %.1f "
              "(linear %.1f, other %.1f) + head/loss %.1f + optimizer %.1f; %.0f tokens/s\n",
              layers, n_params / 1e6, step_ms, layers * (per_layer + linear_per_layer), layers * linear_per_layer,
              layers * per_layer, head, optim, BT / (step_ms * 1e-3));
  const std::string load_end = shell_line("uptime");
  std::printf("load at end: %s\n", load_end.c_str());

  const std::filesystem::path op(out);
  if (op.has_parent_path()) std::filesystem::create_directories(op.parent_path());
  std::ofstream os(out);
  if (!os) throw gt::Error("bench_kernels: cannot write " + out);
  os << "{\n  \"program\": \"bench_kernels\",\n  \"shapes\": {\"B\": " << B << ", \"T\": " << T << ", \"C\": " << C
     << ", \"NH\": " << NH << ", \"V\": " << V << "},\n  \"dtype\": \"float\",\n  \"reps\": " << reps
     << ",\n  \"layers\": " << layers << ",\n  \"estimated_step_ms\": " << step_ms
     << ",\n  \"blas_core\": \"" << json_escape(blas_core) << "\",\n  \"uptime_start\": \"" << json_escape(load_start) << "\",\n  \"uptime_end\": \"" << json_escape(load_end)
     << "\",\n  \"results\": [\n";
  const auto& rs = bench.results();
  for (size_t i = 0; i < rs.size(); ++i) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "    {\"kernel\": \"%s\", \"shape\": \"%s\", \"ms_min\": %.4f, \"ms_median\": %.4f, \"GBps\": %.3f, "
                  "\"GFLOPps\": %.3f}%s\n",
                  rs[i].kernel.c_str(), rs[i].shape.c_str(), rs[i].ms_min, rs[i].ms_median, rs[i].gbps, rs[i].gflops,
                  i + 1 < rs.size() ? "," : "");
    os << line;
  }
  os << "  ]\n}\n";
  std::printf("wrote %s%s\n", out.c_str(), sink == 12345.0 ? " " : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gt::select_blas_kernels(argv);  // the BLAS kernels gridtrain itself runs with (kernels/gemm.hpp)
  Kokkos::initialize(argc, argv);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const gt::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    rc = gt::kExitUsage;
  }
  Kokkos::finalize();
  return rc;
}
