#pragma once
// The per-core hardware peak that MFU divides by on CPU builds (PaLM / Megatron: model FLOP/s over the peak
// the hardware could deliver): measured by kernels/peak_flops.hpp on every rank, agreed over the ranks (the
// best any rank measured: the figure is a property of the core, and load only lowers a measurement), then
// merged with the per-user cache of src/core/peak_cache.hpp (the best figure ever measured on this CPU model),
// so the denominator does not swing with the machine's load from one run to the next.
#include <string>

namespace gt {

class Comm;

struct HostPeak {
  double gflops = 0;       // per rank; 0 when no instruction could be measured (not x86-64)
  std::string kind;        // "fp32 peak (avx512 fma, measured)"
  std::string provenance;  // where the figure comes from: the cache record, and this run's own measurement
};

// Collective over `world` when it is given (every rank measures its own core at the same time; world rank 0
// reads and writes the cache, the result is broadcast); nullptr: this process alone (bench).
// bf16: the peak of the bf16 dot product (the instruction bf16 GEMMs run on), else the fp32 FMA's.
HostPeak resolve_host_peak(bool bf16, Comm* world);

}  // namespace gt
