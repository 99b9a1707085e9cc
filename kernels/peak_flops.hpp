#pragma once
// Hardware peak FLOP/s of one CPU core, measured (kernels/peak_flops.cpp): the denominator of MFU as PaLM and
// Megatron define it (model FLOPs per second over the hardware peak). GPUs: kernels/device_peak.hpp (datasheet).

namespace gt {

struct PeakFlops {
  double fp32_gflops = 0.0;  // widest fp32 FMA (AVX-512, else AVX2), one core; 0 when none was measured
  const char* fp32_isa = "none";
  double bf16_gflops = 0.0;  // bf16 dot product (vdpbf16ps with AVX512_BF16); the fp32 figure without it
  const char* bf16_isa = "none";
};

// About 0.3 s of one core. Call once at start-up, on every rank at the same time if ranks share a node (each
// measures its own core; a core shared by two ranks measures half).
PeakFlops measure_peak_flops();

}  // namespace gt
