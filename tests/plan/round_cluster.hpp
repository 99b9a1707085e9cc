#pragma once
// A synthetic cluster with round numbers, so that the planner tests' expectations can be computed by hand
// (test_time.cpp, test_modern.cpp): 8 devices a node, 100 TFLOP/s in every 16/32-bit precision (200 in fp8),
// half of it reached by every GEMM and by attention, 1 TB/s of memory, links of 100 and 10 GB/s.
#include "src/plan/cluster.hpp"

namespace gt::plan {

inline Cluster round_cluster() {
  Cluster c;
  c.name = "test";
  c.devices_per_node = 8;
  c.memory_gb = 80;
  c.peak_tflops_fp32 = c.peak_tflops_bf16 = c.peak_tflops_fp16 = 100;
  c.peak_tflops_fp8 = 200;
  c.gemm_flops = {1.0};
  c.gemm_efficiency = {0.5};
  c.attention_efficiency = 0.5;
  c.memory_gbs = 1000;
  c.intra = {100, 5, 1};
  c.inter = {10, 10, 1};
  return c;
}

}  // namespace gt::plan
