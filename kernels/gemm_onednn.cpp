// oneDNN backend of the host GEMM dispatch: matmul primitives, one per (transposes, shape, strides, dtypes,
// alpha, beta), created on first use and cached per thread. A row-major operand with row stride ld is a 2-D
// memory descriptor with strides {ld, 1}; its transpose is the same memory seen with strides {1, ld}, so no
// operand is ever copied. alpha is the output scale, beta a sum post-op (absent when beta == 0, so C is then
// only written: NaN in it does not propagate), and a 16-bit C is rounded once, from the fp32 accumulator.
#include <dnnl.hpp>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/gemm.hpp"
#include "kernels/gemm_backend.hpp"

namespace gt {
namespace detail {
namespace {

using dt = dnnl::memory::data_type;

template <class T>
constexpr dt dtype_of() {
  if constexpr (std::is_same_v<T, float>) return dt::f32;
  else if constexpr (std::is_same_v<T, bf16_t>) return dt::bf16;
  else return dt::f16;
}

struct Key {
  int ta, tb, M, N, K, lda, ldb, ldc, a_dt, c_dt;
  float alpha, beta;
  bool operator<(const Key& o) const {
    return std::tie(ta, tb, M, N, K, lda, ldb, ldc, a_dt, c_dt, alpha, beta) <
           std::tie(o.ta, o.tb, o.M, o.N, o.K, o.lda, o.ldb, o.ldc, o.a_dt, o.c_dt, o.alpha, o.beta);
  }
};

struct Entry {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
};

dnnl::memory::desc operand(dt type, int rows, int cols, int ld, bool trans) {
  // logical rows x cols; stored row-major (rows x cols, stride ld) or as the transpose (cols x rows, stride ld)
  const dnnl::memory::dims dims = {rows, cols};
  const dnnl::memory::dims strides = trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, Op ta, Op tb, int M, int N, int K, int lda, int ldb,
                                     int ldc, dt in_t, dt out_t, float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (beta != 0.f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::desc desc(operand(in_t, M, K, lda, ta == Op::T), operand(in_t, K, N, ldb, tb == Op::T),
                                operand(out_t, M, N, ldc, false));
  return dnnl::matmul::primitive_desc(desc, attr, eng);
}

// Whether gemm_set_threads() chose oneDNN's thread count. Until it does, and unless OMP_NUM_THREADS says
// otherwise, oneDNN runs on one thread: one rank drives one core, and OpenMP's default (every core) would
// oversubscribe the node with ranks x cores threads.
bool threads_chosen = false;

// One engine, stream and primitive cache per thread (GEMMs run on the rank's main thread; a second thread
// that calls a GEMM gets its own, so nothing is shared without a lock).
struct Context {
  Context() {
    if (!threads_chosen && !std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
  }
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::map<Key, std::unique_ptr<Entry>> cache;
};
Context& context() {
  thread_local Context ctx;
  return ctx;
}

template <class H, class CT>
void run(Op ta, Op tb, int M, int N, int K, float alpha, const H* A, int lda, const H* B, int ldb, float beta,
         CT* C, int ldc) {
  Context& ctx = context();
  if (K == 0) {  // oneDNN rejects empty reductions; C = beta * C
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        CT& c = C[static_cast<long>(i) * ldc + j];
        c = beta == 0.f ? CT(0.f) : CT(beta * static_cast<float>(c));
      }
    return;
  }
  const Key key{static_cast<int>(ta), static_cast<int>(tb), M, N, K, lda, ldb, ldc,
                static_cast<int>(dtype_of<H>()), static_cast<int>(dtype_of<CT>()), alpha, beta};
  auto it = ctx.cache.find(key);
  if (it == ctx.cache.end()) {
    auto e = std::make_unique<Entry>();
    const auto pd = make_pd(ctx.eng, ta, tb, M, N, K, lda, ldb, ldc, dtype_of<H>(), dtype_of<CT>(), alpha, beta);
    e->prim = dnnl::matmul(pd);
    e->a = dnnl::memory(pd.src_desc(), ctx.eng, nullptr);
    e->b = dnnl::memory(pd.weights_desc(), ctx.eng, nullptr);
    e->c = dnnl::memory(pd.dst_desc(), ctx.eng, nullptr);
    it = ctx.cache.emplace(key, std::move(e)).first;
  }
  Entry& e = *it->second;
  e.a.set_data_handle(const_cast<H*>(A));
  e.b.set_data_handle(const_cast<H*>(B));
  e.c.set_data_handle(C);
  e.prim.execute(ctx.strm, {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}});
  ctx.strm.wait();
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

// The implementation oneDNN picks for a small probe matmul of this input/output type, "" when it is the
// reference one (correct but orders of magnitude slower) or there is none.
std::string probe(dt in_t, dt out_t) {
  try {
    const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    const auto pd = make_pd(eng, Op::N, Op::T, 64, 64, 64, 64, 64, 64, in_t, out_t, 1.f, 0.f);
    const std::string impl = pd.impl_info_str();
    return impl.rfind("ref", 0) == 0 ? std::string() : impl;
  } catch (const dnnl::error&) {
    return std::string();
  }
}

}  // namespace

void onednn_set_threads(int n) {
  // Debian's libdnnl is built with the OpenMP runtime: its parallel regions take omp_get_max_threads() threads.
  omp_set_num_threads(n);
  threads_chosen = true;
}

const OnednnInfo& onednn_info() {
  static const OnednnInfo info = [] {
    OnednnInfo i;
    static char version[32];
    const dnnl_version_t* v = dnnl_version();
    std::snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    i.version = version;
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    i.isa = isa_name(isa);
    i.isa_has_bf16 = isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
    i.impl_f32 = probe(dt::f32, dt::f32);
    i.impl_bf16 = probe(dt::bf16, dt::f32);
    i.impl_f16 = probe(dt::f16, dt::f32);
    // the 16-bit output variants must run too, or the type goes the conversion way
    if (probe(dt::bf16, dt::bf16).empty()) i.impl_bf16.clear();
    if (probe(dt::f16, dt::f16).empty()) i.impl_f16.clear();
    return i;
  }();
  return info;
}

void onednn_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 float beta, float* C, int ldc) {
  run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#define GT_DEFINE_ONEDNN(H, CT) \
  GT_HALF_GEMM_SIGNATURE(onednn_gemm, H, CT) { run(GT_HALF_GEMM_ARGS); }
GT_HALF_GEMM_TYPES(GT_DEFINE_ONEDNN)
#undef GT_DEFINE_ONEDNN

}  // namespace detail
}  // namespace gt
