#pragma once
// A cluster description (inputs/clusters/*.toml): what one device computes and holds, and the two link
// levels between devices (inside a node, between nodes). Datasheet figures plus a few efficiencies; for this
// CPU node they are measured (`gridtrain plan --calibrate`). docs/planner.md explains every key.
#include <istream>
#include <string>
#include <vector>

#include "src/plan/layout.hpp"

namespace gt::plan {

// Alpha-beta cost of one link level: a message of n bytes takes latency + n / (bandwidth * efficiency).
struct LinkLevel {
  double gbs = 1.0;          // GB/s per device, one direction (1 GB = 1e9 bytes)
  double latency_us = 10.0;  // alpha: per message / per ring step
  double efficiency = 1.0;   // achieved fraction of gbs for large messages (NCCL busbw / datasheet)
};

struct Cluster {
  std::string name;
  int devices_per_node = 1;
  bool gpu = false;               // device.kind = "gpu": the trainer runs its kernels' device split there
  double memory_gb = 0;           // per device (1 GB = 1e9 bytes)
  double memory_reserved_gb = 0;  // runtime, context and allocator slack the model never gets
  double peak_tflops_fp32 = 0, peak_tflops_bf16 = 0, peak_tflops_fp16 = 0;
  double peak_tflops_fp8 = 0;     // dense fp8 GEMMs (Hopper); 0: none (fp8 layouts are rejected)
  // Efficiency of a GEMM against the peak as a function of its FLOPs (log-linear between the points).
  std::vector<double> gemm_flops, gemm_efficiency;
  double attention_efficiency = 0.5;  // batched score/value products (s x s per head) against the peak
  double fused_attention_efficiency = 0;  // a fused (flash) attention kernel's FLOPs against the peak; 0: as above
  double memory_gbs = 0, memory_efficiency = 0.7;  // HBM / DRAM: element-wise kernels and the optimizer
  LinkLevel intra, inter;                          // inter: per device, across nodes
  double step_overhead_ms = 0;                     // per step, whatever the size (launches, logging, sync)
  double microbatch_overhead_ms = 0;               // per micro-batch per stage

  double peak_flops(Precision p) const;            // FLOP/s
  double gemm_eff(double flops) const;
  double fused_attention_eff() const { return fused_attention_efficiency > 0 ? fused_attention_efficiency : attention_efficiency; }
  double usable_memory_bytes() const { return (memory_gb - memory_reserved_gb) * 1e9; }
};

// Reads a description; unknown keys, missing keys and bad values are gt::Error naming file, line and key.
Cluster load_cluster(const std::string& path);
// The same from text already open (`path` names it in the messages); the fuzz target reads from memory.
Cluster parse_cluster(std::istream& in, const std::string& path);
// The description as TOML that load_cluster reads back (used by --calibrate).
std::string cluster_to_toml(const Cluster& c);

}  // namespace gt::plan
