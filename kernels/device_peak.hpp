#pragma once
// Datasheet peak rates of NVIDIA data-centre GPUs, for MFU on GPU builds (the CPU builds measure their own sgemm
// ceiling instead). Dense rates, no structured sparsity, boost clock, SXM unless the name says otherwise.
#include <string>

namespace gt {

// Peak TFLOP/s of the device named `device_name` (as cudaGetDeviceProperties / nvidia-smi print it, e.g.
// "NVIDIA H200", "NVIDIA H100 PCIe") for `precision`: "fp32" (plain FP32 FMA, no tensor cores), "tf32", "bf16" or
// "fp16" (tensor cores, fp32 accumulate). 0 when the device or the precision is not in the table: no MFU then.
double device_peak_tflops(const std::string& device_name, const std::string& precision);

// Name of the CUDA device this rank uses; "" on host builds or when no device answers.
std::string device_name();
// The PCI bus id of this rank's GPU ("0000:3B:00.0", cudaDeviceGetPCIBusId): how NVML finds the same device
// (src/energy). Empty on host builds.
std::string device_pci_bus_id();

}  // namespace gt
