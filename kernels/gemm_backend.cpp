// Host GEMM dispatch: which library runs fp32, and which path each 16-bit type takes (oneDNN's own kernel, or
// widening to fp32 around the fp32 GEMM), decided once in gemm_select() from what oneDNN reports it would run.
#include <stdexcept>
#include <string>

#include "kernels/gemm.hpp"
#include "kernels/gemm_backend.hpp"

namespace gt {
namespace {

struct Dispatch {
  GemmBackend backend = GemmBackend::OpenBLAS;
  bool bf16_onednn = false;  // bf16 GEMMs go to oneDNN (else widened to fp32)
  bool fp16_onednn = false;
};

Dispatch resolve(GemmBackend want) {
  Dispatch d;
  if (want == GemmBackend::Auto) want = onednn_compiled() ? GemmBackend::OneDNN : GemmBackend::OpenBLAS;
  if (want == GemmBackend::OneDNN && !onednn_compiled())
    throw std::runtime_error(
        "kernels.gemm = onednn: this build has no oneDNN (install libdnnl-dev and reconfigure), use openblas or auto");
  d.backend = want;
#if defined(GRIDTRAIN_HAVE_ONEDNN)
  if (want == GemmBackend::OneDNN) {
    // An empty implementation name means oneDNN would run its reference kernel (or none): widen instead.
    const detail::OnednnInfo& info = detail::onednn_info();
    d.bf16_onednn = !info.impl_bf16.empty();
    d.fp16_onednn = !info.impl_f16.empty();
  }
#endif
  return d;
}

// Resolved on first use (auto) unless gemm_select() ran before.
Dispatch& dispatch() {
  static Dispatch d = resolve(GemmBackend::Auto);
  return d;
}

}  // namespace

bool onednn_compiled() {
#if defined(GRIDTRAIN_HAVE_ONEDNN)
  return true;
#else
  return false;
#endif
}

void gemm_set_threads(int n) {
  detail::blas_set_threads(n);
#if defined(GRIDTRAIN_HAVE_ONEDNN)
  detail::onednn_set_threads(n);
#endif
}

void gemm_select(GemmBackend b) { dispatch() = resolve(b); }

GemmBackend gemm_backend() { return dispatch().backend; }

const char* gemm_backend_name(GemmBackend b) {
  switch (b) {
    case GemmBackend::Auto: return "auto";
    case GemmBackend::OneDNN: return "onednn";
    case GemmBackend::OpenBLAS: return "openblas";
  }
  return "?";
}

std::string gemm_describe() {
  const Dispatch& d = dispatch();
#if defined(GRIDTRAIN_HAVE_ONEDNN)
  if (d.backend == GemmBackend::OneDNN) {
    const detail::OnednnInfo& info = detail::onednn_info();
    auto half = [&](const char* name, bool onednn, const std::string& impl) {
      std::string s = std::string(name) + " ";
      if (!onednn) return s + "via fp32 conversion (oneDNN has no " + name + " kernel for this CPU)";
      if (std::string(name) == "bf16") s += info.isa_has_bf16 ? "native" : "emulated by oneDNN";
      else s += "by oneDNN";
      return s + " (" + impl + ")";
    };
    return std::string("oneDNN ") + info.version + " " + info.isa + ": fp32 " + info.impl_f32 + ", " +
           half("bf16", d.bf16_onednn, info.impl_bf16) + ", " + half("fp16", d.fp16_onednn, info.impl_f16);
  }
#endif
  return std::string("OpenBLAS ") + blas_core_name() + ": fp32 sgemm, bf16 and fp16 via fp32 conversion";
}

namespace detail {

void fp32_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
#if defined(GRIDTRAIN_HAVE_ONEDNN)
  if (dispatch().backend == GemmBackend::OneDNN)
    return onednn_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
  blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// A half type goes to oneDNN when oneDNN has a kernel for it on this CPU, else through fp32.
template <class H>
bool half_on_onednn() {
  return std::is_same_v<H, bf16_t> ? dispatch().bf16_onednn : dispatch().fp16_onednn;
}
#if defined(GRIDTRAIN_HAVE_ONEDNN)
#define GT_ONEDNN_FIRST(H) \
  if (half_on_onednn<H>()) return onednn_gemm(GT_HALF_GEMM_ARGS);
#else
#define GT_ONEDNN_FIRST(H)
#endif
#define GT_DEFINE_HOST(H, CT)                        \
  GT_HALF_GEMM_SIGNATURE(host_gemm_half, H, CT) {    \
    GT_ONEDNN_FIRST(H)                               \
    convert_gemm_half(GT_HALF_GEMM_ARGS);            \
  }
GT_HALF_GEMM_TYPES(GT_DEFINE_HOST)
#undef GT_DEFINE_HOST
#undef GT_ONEDNN_FIRST

}  // namespace detail
}  // namespace gt
