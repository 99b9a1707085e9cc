// BLAS (OpenBLAS) backend of the GEMM dispatch.
#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kernels/gemm.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace gt {
namespace detail {

static CBLAS_TRANSPOSE to_cblas(Op op) { return op == Op::N ? CblasNoTrans : CblasTrans; }

void blas_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
               int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(Op ta, Op tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace detail

namespace detail {
void blas_set_threads(int n) { openblas_set_num_threads(n); }
}  // namespace detail

const char* blas_core_name() { return openblas_get_corename(); }

namespace {
bool core_is(const char* core, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::strcmp(core, n) == 0) return true;
  return false;
}
}  // namespace

const char* blas_kernels_wanted() {
#if defined(__x86_64__)
  const char* core = openblas_get_corename();
  if (!core) return nullptr;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return core_is(core, {"SkylakeX", "Cooperlake", "SapphireRapids"}) ? nullptr : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return core_is(core, {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}) ? nullptr : "Haswell";
#endif
  return nullptr;
}

void select_blas_kernels(char** argv) {
  const char* mode = std::getenv("GRIDTRAIN_BLAS_AUTO");
  if (std::getenv("OPENBLAS_CORETYPE") || (mode && std::strcmp(mode, "0") == 0)) return;  // the user's choice
  const char* want = blas_kernels_wanted();
  if (!want) return;
  setenv("OPENBLAS_CORETYPE", want, 1);
  setenv("GRIDTRAIN_BLAS_FALLBACK", openblas_get_corename(), 1);  // what the library had picked, for the log
  // The resolved path, not /proc/self/exe itself, so that the process keeps its name in ps and top.
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) {
    self[len] = '\0';
    execv(self, argv);  // returns only on failure: then run on with the kernels we have
  }
  unsetenv("OPENBLAS_CORETYPE");
}

#if !defined(GRIDTRAIN_HAVE_CUBLAS)
bool cublas_compiled() { return false; }
const char* cublas_probe() { return "cuBLAS backend not compiled in"; }
#endif

}  // namespace gt
