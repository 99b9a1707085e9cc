// The datasheet table behind MFU on GPU builds: names as CUDA reports them pick the right row (specific
// variants before the generic name), each precision its column, and anything unknown gives 0 (no MFU) rather
// than a wrong peak. Expected values are NVIDIA's datasheet figures (dense TFLOP/s).
#include <gtest/gtest.h>

#include "kernels/device_peak.hpp"

TEST(DevicePeak, DatasheetRows) {
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H200", "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H200", "fp16"), 989.4);
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H200", "fp32"), 66.9);
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H200", "tf32"), 494.7);
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H200 NVL", "bf16"), 835.5);   // not the SXM row
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H100 PCIe", "bf16"), 756.0);  // not the SXM row
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA H100 80GB HBM3", "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(gt::device_peak_tflops("NVIDIA A100-SXM4-80GB", "fp32"), 19.5);
}

TEST(DevicePeak, UnknownGivesNoPeak) {
  EXPECT_EQ(gt::device_peak_tflops("", "bf16"), 0.0);  // host builds: device_name() is ""
  EXPECT_EQ(gt::device_peak_tflops("NVIDIA GeForce RTX 4090", "bf16"), 0.0);
  EXPECT_EQ(gt::device_peak_tflops("NVIDIA H200", "int8"), 0.0);
}

TEST(DevicePeak, HostBuildHasNoDeviceName) {
#if !defined(KOKKOS_ENABLE_CUDA)
  EXPECT_EQ(gt::device_name(), "");
#else
  GTEST_SKIP() << "CUDA build: the name is the device's";
#endif
}
