// The hardware peak of one core for MFU (PaLM / Megatron: model FLOPs per second over the peak the hardware
// could deliver): loops of the widest fp32 FMA and of the bf16 dot-product instruction, each with independent
// accumulators (more than FMA latency x FMA ports, so the pipes never wait), timed by the thread's CPU time in
// trials of a few milliseconds; the best trial. Every instruction set is checked at run time (__builtin_cpu_supports reads CPUID and the OS's
// XCR0) and compiled with a target attribute, so the binary runs on any x86-64 whatever -march says.
#include "kernels/peak_flops.hpp"

#include <ctime>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gt {
namespace {

// Seconds of CPU time this thread has used: unlike wall time it does not advance while the scheduler runs
// another process on this core, so a trial that was preempted (the machine is shared) still measures the rate
// of the instructions themselves.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Runs body(iters) (which returns a value that depends on every accumulator, so nothing is optimised away)
// with iteration counts growing until a run takes >= 2 ms, then `trials` runs of that size; returns the best
// GFLOP/s over the trials. Short trials, many of them, by CPU time: a trial disturbed by a neighbour (a cache
// or an SMT sibling shared, a preemption between two clock readings) reads low, and the best of the trials is
// the core's rate. The earlier scheme (the best of 5 x 20 ms by wall clock) read 51-217 GFLOP/s on this
// loaded 2-core machine where this one reads 214-219 (scripts/bench_peak_ab.sh, docs/benchmarks.md), and MFU
// swung with it from run to run.
template <class F>
double time_loop(F body, double flops_per_iter, int trials) {
  long iters = 1 << 10;
  volatile float sink = 0;
  for (;;) {
    const double t0 = thread_cpu_seconds();
    sink = sink + body(iters);
    if (thread_cpu_seconds() - t0 >= 0.002 || iters >= (1L << 30)) break;
    iters *= 2;
  }
  double best = 1e30;
  for (int r = 0; r < trials; ++r) {
    const double t0 = thread_cpu_seconds();
    sink = sink + body(iters);
    const double s = thread_cpu_seconds() - t0;
    if (s > 0 && s < best) best = s;
  }
  return flops_per_iter * static_cast<double>(iters) / best * 1e-9;
}

#if defined(__x86_64__)
// Through memory: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized in its own header.
__attribute__((target("avx512f"))) float hsum512(__m512 v) {
  float out[16];
  _mm512_storeu_ps(out, v);
  float s = 0;
  for (float x : out) s += x;
  return s;
}

// The sum of all lanes of sixteen accumulators (the value the timed loops return, so none is dead code).
__attribute__((target("avx512f"))) float hsum512x16(__m512 c0, __m512 c1, __m512 c2, __m512 c3, __m512 c4,
                                                    __m512 c5, __m512 c6, __m512 c7, __m512 c8, __m512 c9,
                                                    __m512 c10, __m512 c11, __m512 c12, __m512 c13, __m512 c14,
                                                    __m512 c15) {
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)),
                                     _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15))));
  return hsum512(s);
}

// 16 accumulators of 16 lanes: 512 flops per iteration. Zen 4/5 and Intel server cores have 2 FMA ports of
// latency 4: 8 independent FMAs in flight saturate them; 16 leave margin (32 zmm registers hold them all).
__attribute__((target("avx512f"))) float fma_avx512(long iters) {
  // Sixteen named accumulators, not an array: an array element passed to the empty asm below lives on the stack
  // (a load and a store around every FMA measured a third of the peak). The asm keeps each chain opaque.
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 c0 = _mm512_set1_ps(0.f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m512 c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  for (long it = 0; it < iters; ++it) {
#define GT_FMA4(x, y, z, w)                                                                                   \
  x = _mm512_fmadd_ps(x, a, b); y = _mm512_fmadd_ps(y, a, b); z = _mm512_fmadd_ps(z, a, b);                  \
  w = _mm512_fmadd_ps(w, a, b);                                                                               \
  asm volatile("" : "+v"(x), "+v"(y), "+v"(z), "+v"(w));
    GT_FMA4(c0, c1, c2, c3) GT_FMA4(c4, c5, c6, c7) GT_FMA4(c8, c9, c10, c11) GT_FMA4(c12, c13, c14, c15)
#undef GT_FMA4
  }
  return hsum512x16(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15);
}

// AVX2: 12 accumulators of 8 lanes (16 ymm registers: 12 + the two operands), 192 flops per iteration.
__attribute__((target("avx2,fma"))) float fma_avx2(long iters) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  __m256 c0 = _mm256_set1_ps(0.f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m256 c8 = c0, c9 = c0, c10 = c0, c11 = c0;
  for (long it = 0; it < iters; ++it) {
#define GT_FMA4(x, y, z, w)                                                                                   \
  x = _mm256_fmadd_ps(x, a, b); y = _mm256_fmadd_ps(y, a, b); z = _mm256_fmadd_ps(z, a, b);                  \
  w = _mm256_fmadd_ps(w, a, b);                                                                               \
  asm volatile("" : "+x"(x), "+x"(y), "+x"(z), "+x"(w));
    GT_FMA4(c0, c1, c2, c3) GT_FMA4(c4, c5, c6, c7) GT_FMA4(c8, c9, c10, c11)
#undef GT_FMA4
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// vdpbf16ps: per 32-bit lane, two bf16 products added to the fp32 accumulator: 16 lanes x 2 x 2 = 64 flops per
// instruction, 16 accumulators: 1024 flops per iteration.
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_avx512(long iters) {
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3380);  // 1, ~6e-8
  __m512 c0 = _mm512_set1_ps(0.f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m512 c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  for (long it = 0; it < iters; ++it) {
#define GT_DP4(x, y, z, w)                                                                                    \
  x = _mm512_dpbf16_ps(x, a, b); y = _mm512_dpbf16_ps(y, a, b); z = _mm512_dpbf16_ps(z, a, b);               \
  w = _mm512_dpbf16_ps(w, a, b);                                                                              \
  asm volatile("" : "+v"(x), "+v"(y), "+v"(z), "+v"(w));
    GT_DP4(c0, c1, c2, c3) GT_DP4(c4, c5, c6, c7) GT_DP4(c8, c9, c10, c11) GT_DP4(c12, c13, c14, c15)
#undef GT_DP4
  }
  return hsum512x16(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15);
}
#endif

}  // namespace

PeakFlops measure_peak_flops(int trials) {
  PeakFlops p;
  p.trials = trials;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    p.fp32_gflops = time_loop(fma_avx512, 16.0 * 16 * 2, trials);
    p.fp32_isa = "avx512 fma";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    p.fp32_gflops = time_loop(fma_avx2, 12.0 * 8 * 2, trials);
    p.fp32_isa = "avx2 fma";
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) {
    p.bf16_gflops = time_loop(dpbf16_avx512, 16.0 * 64, trials);
    p.bf16_isa = "avx512_bf16 vdpbf16ps";
  }
  // AMX (Intel Sapphire Rapids and newer) is not measured: bf16 peak there is the AVX-512 figure, a lower bound.
#endif
  if (p.bf16_gflops == 0.0) {  // no bf16 instruction: bf16 GEMMs run as fp32 ones
    p.bf16_gflops = p.fp32_gflops;
    p.bf16_isa = "none (fp32 peak)";
  }
  return p;
}

}  // namespace gt
