// Fused against materialized attention (issue 23), on one core, as interleaved A/B pairs: on a shared, loaded
// machine only ratios of runs taken side by side mean something, so every figure is a pair (materialized then
// fused, at the same moment) repeated, and the per-pair ratios are reported with their median. Times are the
// process's CPU time (CLOCK_PROCESS_CPUTIME_ID; one thread: BLAS and oneDNN on one thread): on a machine whose
// load exceeds its cores, wall time mostly measures the wait for a core, CPU time the work (it still carries the
// cache and memory-bandwidth interference of the neighbours). The wall time of each step is printed too.
//
//   bench_attention --mode kernel [--B 1 --T 1024 --NH 12 --hd 64 --pairs 3]
//       attention forward + backward alone, fp32 and bf16, with an sgemm (and bf16 GEMM) of the attention's inner
//       size timed in the same pair: the attention's rate as a fraction of the GEMM rate of that moment.
//   bench_attention --mode step [--preset gpt2-124m --B 1 --T 1024 --pairs 3 --precision fp32|bf16]
//       the whole training step of GPT<T> (forward, backward, AdamW on fp32 masters), materialized vs fused, and
//       the attention kernels alone on the same shape in the same pair (L layers' worth): attention's share.
//   bench_attention --mode memory --attention fused|materialized [--preset gpt2-124m --B 1 --T 4096 --precision]
//       one step in a fresh process: peak RSS against the memory ledger (src/plan/memory.hpp) and the model's own
//       count (activation_bytes_per_slot + work_bytes + parameters, gradients, AdamW state). With --ledger-only 1
//       the ledger alone (no model built: for shapes that do not fit, like materialized attention at T = 8192).
// Every mode prints its figures, the load average before and after, and writes them to --out (JSON).
// FLOPs counted (the mathematically needed causal products, the same count for both variants): forward
// 2 T^2 hd per (b, h) (S and PV over the causal half), backward 4 T^2 hd (dP, dS^T-products dQ, dK, dV); the
// fused backward's recomputed S is extra work it does, not counted.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "kernels/adamw.hpp"
#include "kernels/attention_fused.hpp"
#include "kernels/kernels.hpp"
#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/model/gpt.hpp"
#include "src/plan/memory.hpp"
#include "src/train/report/metrics.hpp"

namespace {

double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
using gt::bench::median;
std::string load() { return gt::bench::shell_line("cat /proc/loadavg"); }

struct Args {
  std::string mode = "kernel", preset = "gpt2-124m", precision = "fp32", attention = "fused", out;
  int B = 1, T = 1024, NH = 12, hd = 64, pairs = 3;
  bool ledger_only = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode") a.mode = v;
    else if (k == "--preset") a.preset = v;
    else if (k == "--precision") a.precision = v;
    else if (k == "--attention") a.attention = v;
    else if (k == "--out") a.out = v;
    else if (k == "--B") a.B = std::stoi(v);
    else if (k == "--T") a.T = std::stoi(v);
    else if (k == "--NH") a.NH = std::stoi(v);
    else if (k == "--hd") a.hd = std::stoi(v);
    else if (k == "--pairs") a.pairs = std::stoi(v);
    else if (k == "--ledger-only") a.ledger_only = v == "1";
    else throw gt::Error("bench_attention: unknown option " + k);
  }
  if (a.out.empty()) a.out = "runs/bench/attention_" + a.mode + ".json";
  return a;
}

// Attention forward + backward of one layer, materialized or fused, on buffers of its own.
template <class T>
struct AttentionBuffers {
  using A = gt::acc_t<T>;
  int B, T_, NH, hd;
  gt::DeviceView<T> qkv, out, dout, dqkv, att, scratch;
  gt::DeviceView<A> lse, fscratch;
  AttentionBuffers(int B_, int T__, int NH_, int hd_) : B(B_), T_(T__), NH(NH_), hd(hd_) {
    const long BT = long(B) * T_, C = long(NH) * hd;
    std::vector<T> h(size_t(BT * 3 * C));
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto& x : h) x = T(d(rng));
    qkv = gt::DeviceView<T>("qkv", BT * 3 * C);
    Kokkos::deep_copy(qkv, Kokkos::View<T*, gt::host_space, Kokkos::MemoryUnmanaged>(h.data(), h.size()));
    out = gt::DeviceView<T>("out", BT * C);
    dout = gt::DeviceView<T>("dout", BT * C);
    Kokkos::deep_copy(dout, T(0.01f));
    dqkv = gt::DeviceView<T>("dqkv", BT * 3 * C);
  }
  void run(bool fused) {
    if (fused) {
      if (lse.size() == 0) {
        lse = gt::DeviceView<A>("lse", long(B) * NH * T_);
        fscratch = gt::DeviceView<A>("fscratch", gt::attention_fused_scratch_elems(B, NH, T_, hd));
      }
      gt::attention_fused_forward(out.data(), lse.data(), fscratch.data(), qkv.data(), B, T_, NH, hd);
      gt::attention_fused_backward(dqkv.data(), fscratch.data(), dout.data(), qkv.data(), out.data(), lse.data(), B,
                                   T_, NH, hd);
    } else {
      if (att.size() == 0) {
        att = gt::DeviceView<T>("att", long(B) * NH * T_ * T_);
        scratch = gt::DeviceView<T>("scratch", gt::attention_scratch_elems(NH, T_));
      }
      gt::attention_forward(out.data(), att.data(), qkv.data(), B, T_, NH, hd);
      gt::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T_, NH, hd);
    }
    Kokkos::fence();
  }
  void release(bool fused) {  // the other variant's big buffers, so that a pair does not hold both
    if (fused) lse = fscratch = gt::DeviceView<A>();
    else att = scratch = gt::DeviceView<T>();
  }
};

double attention_flops(int B, int T, int NH, int hd) { return 6.0 * double(B) * NH * double(T) * T * hd; }

// CPU seconds of one call of f (after one untimed call when warm); its wall seconds in *wall.
double time_once(const std::function<void()>& f, bool warm = true, double* wall = nullptr) {
  if (warm) f();
  const double w0 = wall_now(), t0 = cpu_now();
  f();
  const double t = cpu_now() - t0;
  if (wall) *wall = wall_now() - w0;
  return t;
}

// A GEMM of the attention's inner shape class: (T x hd) x (hd x T) products are what its tiles do; the rate of
// one big square GEMM of the same precision is the ceiling quoted in docs (measured in the same pair).
template <class T>
double gemm_rate(int n) {
  gt::DeviceView<T> a("a", long(n) * n), b("b", long(n) * n);
  gt::DeviceView<gt::acc_t<T>> c("c", long(n) * n);
  Kokkos::deep_copy(a, T(0.5f));
  Kokkos::deep_copy(b, T(0.25f));
  const double s = time_once([&] {
    gt::gemm(gt::Op::N, gt::Op::T, n, n, n, gt::acc_t<T>(1), a.data(), n, b.data(), n, gt::acc_t<T>(0), c.data(), n);
  });
  return 2.0 * n * n * double(n) / s * 1e-9;
}

template <class T>
void kernel_pairs(const Args& a, const char* prec, std::ostringstream& js) {
  AttentionBuffers<T> buf(a.B, a.T, a.NH, a.hd);
  const double fl = attention_flops(a.B, a.T, a.NH, a.hd);
  std::vector<double> mat, fus, ratio, gemm;
  for (int p = 0; p < a.pairs; ++p) {
    mat.push_back(time_once([&] { buf.run(false); }));
    buf.release(false);
    fus.push_back(time_once([&] { buf.run(true); }));
    buf.release(true);
    gemm.push_back(gemm_rate<T>(1024));
    ratio.push_back(mat.back() / fus.back());
    std::printf("  %s pair %d: materialized %.1f ms, fused %.1f ms, ratio %.2f; GEMM 1024^3 %.1f GFLOP/s; load %s\n",
                prec, p + 1, 1e3 * mat.back(), 1e3 * fus.back(), ratio.back(), gemm.back(), load().c_str());
    std::fflush(stdout);
  }
  const double rf = fl / median(fus) * 1e-9, rm = fl / median(mat) * 1e-9, g = median(gemm);
  std::printf("%s: median materialized %.1f ms (%.1f GFLOP/s), fused %.1f ms (%.1f GFLOP/s, %.0f%% of the GEMM's "
              "%.1f), median ratio %.2f\n",
              prec, 1e3 * median(mat), rm, 1e3 * median(fus), rf, 100 * rf / g, g, median(ratio));
  js << "\"" << prec << "\": {\"materialized_ms\": " << 1e3 * median(mat) << ", \"fused_ms\": " << 1e3 * median(fus)
     << ", \"ratio_median\": " << median(ratio) << ", \"fused_gflops\": " << rf << ", \"materialized_gflops\": " << rm
     << ", \"gemm_gflops\": " << g << "}";
}

// ---- whole step ----

template <class T>
struct StepModel {
  using A = gt::acc_t<T>;
  gt::ModelConfig m;
  int B;
  gt::GPT<T> model;
  gt::DeviceView<float> master, am, av;
  std::vector<int32_t> in, tgt;
  StepModel(gt::ModelConfig mc, int B_, const std::string& attention)
      : m([&] { mc.attention = attention; return mc; }()), B(B_),
        model(m, 1, B, gt::StageLayout{0, 1, 0, m.n_layer}, gt::TensorParallel{}, 1) {
    auto& st = model.store();
    master = gt::DeviceView<float>("master", st.size());
    am = gt::DeviceView<float>("m", st.size());
    av = gt::DeviceView<float>("v", st.size());
    gt::convert(master.data(), st.params(), long(st.size()));
    std::mt19937 rng(1);
    in.resize(size_t(B) * m.seq_len);
    tgt.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = int32_t(rng() % m.vocab_size);
      tgt[i] = int32_t(rng() % m.vocab_size);
    }
  }
  void step(int it) {
    auto& st = model.store();
    st.zero_grads();
    model.set_tokens(0, in.data(), tgt.data());
    model.forward(0, true, 1.0 / double(B * m.seq_len));
    model.backward(0);
    for (const auto& s : st.tensors())
      gt::adamw_update(master.data() + s.offset, st.grads() + s.offset, am.data() + s.offset, av.data() + s.offset,
                       long(s.size), 1e-4f, 0.9f, 0.95f, 1e-8f, s.decay ? 0.1f : 0.0f, it + 1, 1.0f);
    gt::convert(st.params(), master.data(), long(st.size()));
    (void)model.take_loss_sum();
    Kokkos::fence();
  }
};

// The model of the preset's deck, at the benchmark's sequence length.
gt::ModelConfig preset_model(const Args& a) {
  gt::Config cfg;
  cfg.load_file(gt::resolve_deck(a.preset));
  gt::ModelConfig mc = cfg.model;
  mc.seq_len = a.T;
  return mc;
}

template <class T>
void step_pairs(const Args& a, std::ostringstream& js) {
  gt::ModelConfig mc = preset_model(a);
  const int hd = mc.d_model / mc.n_head;
  StepModel<T> mat(mc, a.B, "materialized"), fus(mc, a.B, "fused");
  AttentionBuffers<T> att(a.B, a.T, mc.n_head, hd);
  std::vector<double> tm, tf, am, af, ratio;
  for (int it = 0; it < a.pairs + 1; ++it) {  // it 0: warm-up of both
    double wm = 0, wf = 0;
    const double sm = time_once([&] { mat.step(it); }, false, &wm);
    const double amat = mc.n_layer * time_once([&] { att.run(false); });
    att.release(false);
    const double sf = time_once([&] { fus.step(it); }, false, &wf);
    const double afus = mc.n_layer * time_once([&] { att.run(true); });
    att.release(true);
    if (it == 0) continue;
    tm.push_back(sm); tf.push_back(sf); am.push_back(amat); af.push_back(afus); ratio.push_back(sm / sf);
    std::printf("  pair %d: step materialized %.2f s (attention %.0f%%), fused %.2f s (attention %.0f%%), ratio %.3f "
                "(wall %.2f / %.2f s); load %s\n", it, sm, 100 * amat / sm, sf, 100 * afus / sf, sm / sf, wm, wf,
                load().c_str());
    std::fflush(stdout);
  }
  std::printf("%s %s B=%d T=%d: median step materialized %.2f s, fused %.2f s; attention share %.0f%% -> %.0f%%; "
              "median ratio %.3f\n", a.preset.c_str(), a.precision.c_str(), a.B, a.T, median(tm), median(tf),
              100 * median(am) / median(tm), 100 * median(af) / median(tf), median(ratio));
  js << "\"step_materialized_s\": " << median(tm) << ", \"step_fused_s\": " << median(tf)
     << ", \"attention_share_materialized\": " << median(am) / median(tm)
     << ", \"attention_share_fused\": " << median(af) / median(tf) << ", \"ratio_median\": " << median(ratio);
}

// ---- memory ----

gt::plan::MemoryBreakdown ledger(const Args& a, const gt::ModelConfig& m) {
  gt::plan::Layout l;
  l.micro_batch = a.B;
  l.precision = gt::plan::parse_precision(a.precision);
  return gt::plan::stage_memory(gt::plan::ModelShape::from(m), l, gt::plan::Framework::Gridtrain, 0);
}

template <class T>
void memory_run(const Args& a, std::ostringstream& js) {
  gt::ModelConfig mc = preset_model(a);
  if (a.ledger_only) {
    mc.attention = a.attention;
    const gt::plan::MemoryBreakdown pm = ledger(a, mc);
    std::printf("%s %s %s B=%d T=%d: ledger only: activations %.0f MiB, work %.0f MiB, total %.0f MiB\n",
                a.preset.c_str(), a.precision.c_str(), a.attention.c_str(), a.B, a.T, pm.activations / 1048576,
                pm.workspace / 1048576, pm.total() / 1048576);
    js << "\"attention\": \"" << a.attention << "\", \"ledger_activations_mib\": " << pm.activations / 1048576
       << ", \"ledger_work_mib\": " << pm.workspace / 1048576 << ", \"ledger_total_mib\": " << pm.total() / 1048576;
    return;
  }
  const double rss0 = gt::peak_rss_bytes();
  StepModel<T> s(mc, a.B, a.attention);
  s.step(0);
  const double rss = gt::peak_rss_bytes();
  auto& st = s.model.store();
  const double states = double(st.size()) * (sizeof(T) + 4.0 * 4);  // params, fp32 grads, master, m, v
  const double model_count = states + double(s.model.activation_bytes_per_slot() + s.model.work_bytes());
  const gt::plan::MemoryBreakdown pm = ledger(a, s.m);
  std::printf("%s %s %s B=%d T=%d: peak RSS %.0f MiB (%.0f before the model); model's count %.0f MiB "
              "(activations %.0f, work %.0f); ledger activations %.0f MiB, work %.0f MiB\n",
              a.preset.c_str(), a.precision.c_str(), a.attention.c_str(), a.B, a.T, rss / 1048576, rss0 / 1048576,
              model_count / 1048576, s.model.activation_bytes_per_slot() / 1048576.0,
              s.model.work_bytes() / 1048576.0, pm.activations / 1048576, pm.workspace / 1048576);
  js << "\"attention\": \"" << a.attention << "\", \"peak_rss_mib\": " << rss / 1048576
     << ", \"model_count_mib\": " << model_count / 1048576
     << ", \"activations_mib\": " << s.model.activation_bytes_per_slot() / 1048576.0
     << ", \"work_mib\": " << s.model.work_bytes() / 1048576.0 << ", \"ledger_activations_mib\": "
     << pm.activations / 1048576 << ", \"ledger_work_mib\": " << pm.workspace / 1048576;
}

int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  gt::gemm_set_threads(1);
  std::ostringstream js;
  const std::string load0 = load();
  std::printf("bench_attention %s: %s; load %s\n", a.mode.c_str(), gt::gemm_describe().c_str(), load0.c_str());
  js << "{\"mode\": \"" << a.mode << "\", \"B\": " << a.B << ", \"T\": " << a.T << ", \"precision\": \"" << a.precision
     << "\", \"cpu\": \"" << gt::bench::json_escape(gt::bench::shell_line("lscpu | sed -n 's/^Model name: *//p'"))
     << "\", \"date\": \"" << gt::bench::shell_line("date -u +%FT%TZ") << "\", \"load_before\": \"" << load0 << "\", ";
  const bool bf16 = a.precision == "bf16";
  if (a.mode == "kernel") {
    js << "\"NH\": " << a.NH << ", \"hd\": " << a.hd << ", ";
    kernel_pairs<float>(a, "fp32", js);
    js << ", ";
    kernel_pairs<gt::bf16_t>(a, "bf16", js);
  } else if (a.mode == "step") {
    js << "\"preset\": \"" << a.preset << "\", ";
    if (bf16) step_pairs<gt::bf16_t>(a, js);
    else step_pairs<float>(a, js);
  } else if (a.mode == "memory") {
    js << "\"preset\": \"" << a.preset << "\", ";
    if (bf16) memory_run<gt::bf16_t>(a, js);
    else memory_run<float>(a, js);
  } else {
    throw gt::Error("bench_attention: --mode is kernel, step or memory, not " + a.mode);
  }
  js << ", \"load_after\": \"" << load() << "\"}\n";
  const std::string dir = a.out.substr(0, a.out.find_last_of('/'));
  if (dir != a.out) gt::make_dirs(dir);
  gt::bench::write_text(a.out, js.str(), "bench_attention");
  std::printf("wrote %s\n", a.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gt::select_blas_kernels(argv);  // the BLAS kernels gridtrain itself runs with (kernels/gemm.hpp)
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attention: error: %s\n", e.what());
    rc = 2;
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}
