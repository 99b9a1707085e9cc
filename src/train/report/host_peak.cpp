#include "src/train/report/host_peak.hpp"

#include <unistd.h>

#include <cstdio>

#include "kernels/peak_flops.hpp"
#include "src/comm/comm.hpp"
#include "src/core/peak_cache.hpp"

namespace gt {
namespace {

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

}  // namespace

HostPeak resolve_host_peak(bool bf16, Comm* world) {
  const PeakFlops pf = measure_peak_flops();
  // Without AVX512_BF16 the bf16 figure is the fp32 one (bf16 GEMMs then run as fp32 ones): one record.
  const bool own_bf16 = bf16 && pf.bf16_gflops != pf.fp32_gflops;
  const std::string isa = own_bf16 ? pf.bf16_isa : pf.fp32_isa;
  double best[1] = {own_bf16 ? pf.bf16_gflops : pf.fp32_gflops};
  const double mine = best[0];
  if (world) world->allreduce(best, 1, DType::F64, ReduceOp::Max);
  const double measured = best[0];

  HostPeak out;
  out.kind = std::string(bf16 ? "bf16" : "fp32") + " peak (" + isa + ", measured)";
  if (measured <= 0) return out;  // no instruction measured here (not x86-64): the caller falls back
  double value[1] = {measured};
  if (!world || world->rank() == 0) {
    const std::string path = peak_cache_path();
    std::string write_error;
    const PeakRecord rec =
        merge_peak_record(path, PeakRecord{cpu_identity(), isa, measured, "", host_name(), pf.trials, 0}, &write_error);
    value[0] = rec.gflops;
    char now[160];
    if (world && world->size() > 1)
      std::snprintf(now, sizeof now, "; this run measured %.1f (the best of %d ranks; rank 0: %.1f)", measured,
                    world->size(), mine);
    else
      std::snprintf(now, sizeof now, "; this run measured %.1f", measured);
    out.provenance = "'" + rec.cpu + "': " + describe_peak_record(rec, write_error.empty() ? path : "") + now +
                     (write_error.empty() ? "" : "; not cached: " + write_error);
  }
  if (world) world->broadcast(value, 1, DType::F64, 0);
  out.gflops = value[0];
  return out;
}

}  // namespace gt
