#pragma once
// Hardware peak FLOP/s of one CPU core, measured (kernels/peak_flops.cpp): the denominator of MFU as PaLM and
// Megatron define it (model FLOPs per second over the hardware peak). GPUs: kernels/device_peak.hpp (datasheet).

namespace gt {

struct PeakFlops {
  double fp32_gflops = 0.0;  // widest fp32 FMA (AVX-512, else AVX2), one core; 0 when none was measured
  const char* fp32_isa = "none";
  double bf16_gflops = 0.0;  // bf16 dot product (vdpbf16ps with AVX512_BF16); the fp32 figure without it
  const char* bf16_isa = "none";
  int trials = 0;            // trials per instruction; each figure is the best of them
};

// Each figure is the best of `trials` trials of >= 2 ms of this thread's CPU time (so about 2 x trials ms of
// one core per instruction measured). CPU time, not wall time: a process time-sharing the core does not lower
// the figure, so ranks that share a loaded machine still measure the core's peak. What is left (an SMT sibling
// or a cache shared while a trial runs) only lowers trials, which the best of many discards; callers that keep
// figures across runs (src/core/peak_cache.hpp) keep the best of those too.
PeakFlops measure_peak_flops(int trials = 16);

}  // namespace gt
