// Single-rank training-step benchmark (issue #2): forward, backward and AdamW of the whole model for the
// tiny, small and gpt2-124m presets, on one core.
//
//   build/bench/bench_step [--presets tiny,small,gpt2-124m] [--steps N] [--out runs/bench/step.json]
//
// FLOPs per step = tokens * (6 N + 12 L T C): N = weights taking part in matrix products (the four linear
// layers of each block and the tied head), 12 L T C for attention scores and values (forward + backward,
// full T x T as Megatron and nanoGPT count it): src/core/model_flops.hpp, shared with the trainer and planner. MFU = achieved GFLOP/s over the core's fp32 FMA peak, the same
// figure the trainer uses (src/train/report/host_peak.hpp, cached per CPU model); mfu_sgemm over the single-core sgemm
// rate this program measures itself (a 2048^3 sgemm, best of 5); on a GPU build MFU is over the device's datasheet
// fp32 peak (kernels/device_peak.hpp), with a fence before each clock reading (the work is asynchronous there). Memory: peak RSS of the process after
// each preset's run against the analytic count of parameters, gradients, AdamW m and v and the activations
// the model keeps (GPT::activation_bytes_per_slot + work buffers).
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/device_peak.hpp"
#include "kernels/gemm.hpp"
#include "src/core/config.hpp"
#include "src/core/model_flops.hpp"
#include "src/model/gpt.hpp"
#include "src/train/report/host_peak.hpp"
#include "src/train/report/metrics.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string load_avg() {
  std::ifstream f("/proc/loadavg");
  std::string a;
  std::getline(f, a);
  return a;
}

struct Result {
  std::string preset;
  double ms = 0, fwd_ms = 0, bwd_ms = 0, opt_ms = 0, tok_s = 0, gflops = 0, mfu = 0, mfu_sgemm = 0, rss_mb = 0,
         analytic_mb = 0;
  long long params = 0;
};

Result bench(const std::string& preset, int steps, double peak, double sgemm) {
  gt::Config cfg;
  cfg.load_file(gt::resolve_deck(preset));
  const gt::ModelConfig& m = cfg.model;
  const int B = cfg.train.micro_batch_size, T = m.seq_len;
  gt::StageLayout whole{0, 1, 0, m.n_layer};
  gt::GPT<float> model(m, 1, B, whole, gt::TensorParallel{}, 1);
  auto& st = model.store();
  gt::DeviceView<float> am("m", st.size()), av("v", st.size());

  std::mt19937 rng(1);
  std::vector<int32_t> tok(size_t(B) * (T + 1));
  for (auto& t : tok) t = int32_t(rng() % m.vocab_size);
  std::vector<int32_t> in(size_t(B) * T), tgt(size_t(B) * T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      in[size_t(b) * T + t] = tok[size_t(b) * (T + 1) + t];
      tgt[size_t(b) * T + t] = tok[size_t(b) * (T + 1) + t + 1];
    }

  Result r;
  r.preset = preset;
  for (const auto& s : gt::model_tensor_specs(m, whole, 0, 1)) r.params += s.global_size();
  const double flops = double(B) * T * gt::gpt_flops_per_token(m);  // the trainer's and the planner's count
  std::vector<double> f, b, o;
  for (int it = 0; it < steps + 1; ++it) {  // the first step is warm-up
    auto t0 = std::chrono::steady_clock::now();
    st.zero_grads();
    model.set_tokens(0, in.data(), tgt.data());
    model.forward(0, true, 1.0f / float(B * T));
    Kokkos::fence();
    const double tf = seconds_since(t0);
    model.backward(0);
    Kokkos::fence();
    const double tb = seconds_since(t0) - tf;
    for (const auto& s : st.tensors())
      gt::adamw_update(st.params() + s.offset, st.grads() + s.offset, am.data() + s.offset, av.data() + s.offset,
                       long(s.size), 1e-4f, 0.9f, 0.95f, 1e-8f, s.decay ? 0.1f : 0.0f, it + 1, 1.0f);
    Kokkos::fence();
    const double to = seconds_since(t0) - tf - tb;
    if (it > 0) {
      f.push_back(tf);
      b.push_back(tb);
      o.push_back(to);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  r.fwd_ms = mean(f) * 1e3;
  r.bwd_ms = mean(b) * 1e3;
  r.opt_ms = mean(o) * 1e3;
  r.ms = r.fwd_ms + r.bwd_ms + r.opt_ms;
  r.tok_s = double(B) * T / (r.ms * 1e-3);
  r.gflops = flops / (r.ms * 1e-3) * 1e-9;
  r.mfu = peak > 0 ? r.gflops / peak : 0.0;
  r.mfu_sgemm = sgemm > 0 ? r.gflops / sgemm : 0.0;
  r.rss_mb = gt::peak_rss_bytes() / 1048576.0;
  r.analytic_mb = (4.0 * st.size() * sizeof(float) + model.activation_bytes_per_slot() + model.work_bytes()) / 1048576.0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  gt::select_blas_kernels(argv);  // the BLAS kernels gridtrain itself runs with (kernels/gemm.hpp)
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  std::string presets = "tiny,small,gpt2-124m", out = "runs/bench/step.json";
  int steps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--presets") presets = argv[i + 1];
    else if (k == "--steps") steps = std::atoi(argv[i + 1]);
    else if (k == "--out") out = argv[i + 1];
  }
  gt::gemm_set_threads(1);
  const std::string load_before = load_avg();
  // MFU against the same peak the trainer divides by (src/train/report/host_peak.hpp: the core's fp32 FMA peak,
  // measured robustly and cached per CPU model); the sgemm ceiling stays as a second figure (mfu_sgemm).
  double peak = 0, sgemm = 0;
  std::string peak_kind;
  if constexpr (gt::exec_on_host) {
    const gt::HostPeak hp = gt::resolve_host_peak(false, nullptr);
    sgemm = gt::measure_sgemm_gflops(2048, 5);
    peak = hp.gflops > 0 ? hp.gflops : sgemm;
    peak_kind = hp.gflops > 0 ? hp.kind : "sgemm rate (no peak measured)";
    std::printf("MFU against the %s: %.1f GFLOP/s, from %s\nsingle-core sgemm ceiling (2048^3, best of 5): %.1f "
                "GFLOP/s   load: %s\n",
                peak_kind.c_str(), peak, hp.provenance.c_str(), sgemm, load_before.c_str());
  } else {
    const std::string dev = gt::device_name();
    peak = 1e3 * gt::device_peak_tflops(dev, "fp32");
    peak_kind = "fp32 datasheet peak of " + dev;
    std::printf("device %s: datasheet fp32 peak %.1f GFLOP/s%s   load: %s\n", dev.c_str(), peak,
                peak > 0 ? "" : " (not in kernels/device_peak.cpp: no MFU)", load_before.c_str());
  }
  std::printf("%-10s %10s %9s %9s %8s %10s %9s %7s %7s %10s %12s\n", "preset", "ms/step", "fwd", "bwd", "adamw",
              "tokens/s", "GFLOP/s", "MFU", "/sgemm", "peakRSS MB", "analytic MB");
  std::vector<Result> res;
  std::stringstream items(presets);
  std::string p;
  while (std::getline(items, p, ',')) {
    Result r = bench(p, p == "gpt2-124m" ? std::max(1, steps - 1) : steps, peak, sgemm);
    std::printf("%-10s %10.1f %9.1f %9.1f %8.1f %10.0f %9.1f %6.1f%% %6.1f%% %10.0f %12.0f\n", r.preset.c_str(),
                r.ms, r.fwd_ms, r.bwd_ms, r.opt_ms, r.tok_s, r.gflops, 100 * r.mfu, 100 * r.mfu_sgemm, r.rss_mb,
                r.analytic_mb);
    std::fflush(stdout);
    res.push_back(r);
  }
  std::string dir = out.substr(0, out.find_last_of('/'));
  if (dir != out) gt::make_dirs(dir);
  std::ofstream f(out);
  f << "{\"peak_gflops\": " << peak << ", \"peak_kind\": \"" << peak_kind << "\", \"sgemm_gflops\": " << sgemm
    << ", \"load_before\": \"" << load_before << "\", \"load_after\": \""
    << load_avg() << "\", \"results\": [";
  for (size_t i = 0; i < res.size(); ++i) {
    const Result& r = res[i];
    f << (i ? ", " : "") << "{\"preset\": \"" << r.preset << "\", \"params\": " << r.params << ", \"ms_per_step\": "
      << r.ms << ", \"forward_ms\": " << r.fwd_ms << ", \"backward_ms\": " << r.bwd_ms << ", \"optimizer_ms\": "
      << r.opt_ms << ", \"tokens_per_s\": " << r.tok_s << ", \"gflops\": " << r.gflops << ", \"mfu\": " << r.mfu
      << ", \"mfu_sgemm\": " << r.mfu_sgemm << ", \"peak_rss_mb\": " << r.rss_mb << ", \"analytic_mb\": "
      << r.analytic_mb << "}";
  }
  f << "]}\n";
  std::printf("wrote %s\n", out.c_str());
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}
