#include "kernels/device_peak.hpp"

namespace gt {

namespace {
struct PeakRow {
  const char* name_part;  // first row whose part occurs in the device name wins: specific names first
  double fp32, tf32, bf16;
};
// NVIDIA datasheets (H200, H100, A100, L40S), dense TFLOP/s.
constexpr PeakRow kPeaks[] = {
    {"H200 NVL", 60.0, 417.5, 835.5},
    {"H200", 66.9, 494.7, 989.4},       // SXM: the H100 SXM's rates with more and faster memory
    {"GH200", 66.9, 494.7, 989.4},
    {"H100 PCIe", 51.2, 378.0, 756.0},
    {"H100 NVL", 60.0, 417.5, 835.5},
    {"H100", 66.9, 494.7, 989.4},       // SXM ("NVIDIA H100 80GB HBM3")
    {"A100", 19.5, 156.0, 312.0},
    {"L40S", 91.6, 183.0, 362.1},
};
}  // namespace

double device_peak_tflops(const std::string& device_name, const std::string& precision) {
  for (const PeakRow& r : kPeaks) {
    if (device_name.find(r.name_part) == std::string::npos) continue;
    if (precision == "fp32") return r.fp32;
    if (precision == "tf32") return r.tf32;
    if (precision == "bf16" || precision == "fp16") return r.bf16;
    return 0.0;
  }
  return 0.0;
}

}  // namespace gt
