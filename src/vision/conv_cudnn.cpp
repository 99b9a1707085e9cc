// cuDNN's legacy convolution API (cudnnConvolutionForward and the two backward calls). cuDNN 9 marks it deprecated
// in favour of its graph API but still ships and supports it; it says in a few calls what the graph API needs a
// graph per pass for, and this is the first step of the device path. The deprecation warnings are silenced here
// only, so that the CUDA build stays free of warnings elsewhere.
#include "src/vision/conv_cudnn.hpp"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/device_stream.hpp"
#include "src/core/error.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace gt::vision {

namespace {

void check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw Error(std::string("cuDNN: ") + what + ": " + cudnnGetErrorString(st));
}

void check(cudaError_t st, const char* what) {
  if (st != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(st));
}

}  // namespace

struct CudnnConv::State {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  void* work = nullptr;
  size_t work_bytes = 0;
};

bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

CudnnConv::CudnnConv(const ConvShape& s, void* stream, bool synchronize)
    : s_(s), sync_(synchronize), st_(std::make_unique<State>()) {
  if (s.bf16) throw Error("cuDNN convolution: bf16 operands are not built yet (fp32 only)");
  State& t = *st_;
  check(cudnnCreate(&t.handle), "cudnnCreate");
  if (stream) check(cudnnSetStream(t.handle, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
  check(cudnnCreateTensorDescriptor(&t.x), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&t.y), "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&t.w), "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&t.conv), "cudnnCreateConvolutionDescriptor");
  check(cudnnSetTensor4dDescriptor(t.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w), "input descriptor");
  check(cudnnSetTensor4dDescriptor(t.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, s.n, s.k, s.out_h(), s.out_w()),
        "output descriptor");
  check(cudnnSetFilter4dDescriptor(t.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, s.k, s.c, s.r, s.s), "filter descriptor");
  // cross-correlation, as every framework's "convolution" (and conv.hpp's) is
  check(cudnnSetConvolution2dDescriptor(t.conv, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "convolution descriptor");
  check(cudnnSetConvolutionMathType(t.conv, CUDNN_FMA_MATH), "math type (FMA: no TF32)");
  // The heuristics' first choice that is supported (no benchmarking: the choice must not depend on timing).
  int got_f = 0, got_d = 0, got_g = 0;
  cudnnConvolutionFwdAlgoPerf_t f[8];
  check(cudnnGetConvolutionForwardAlgorithm_v7(t.handle, t.x, t.w, t.conv, t.y, 8, &got_f, f), "forward algorithm");
  cudnnConvolutionBwdDataAlgoPerf_t d[8];
  check(cudnnGetConvolutionBackwardDataAlgorithm_v7(t.handle, t.w, t.y, t.conv, t.x, 8, &got_d, d),
        "backward-data algorithm");
  cudnnConvolutionBwdFilterAlgoPerf_t g[8];
  check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(t.handle, t.x, t.y, t.conv, t.w, 8, &got_g, g),
        "backward-weights algorithm");
  const auto supported = [](const auto& p) { return p.status == CUDNN_STATUS_SUCCESS; };
  const auto fwd_ok = std::find_if(f, f + got_f, supported);
  const auto data_ok = std::find_if(d, d + got_d, supported);
  const auto filt_ok = std::find_if(g, g + got_g, supported);
  if (fwd_ok == f + got_f || data_ok == d + got_d || filt_ok == g + got_g)
    throw Error("cuDNN convolution: no supported algorithm for this shape");
  t.fwd = fwd_ok->algo;
  t.bwd_data = data_ok->algo;
  t.bwd_filter = filt_ok->algo;
  size_t a = 0, b = 0, c = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(t.handle, t.x, t.w, t.conv, t.y, t.fwd, &a), "forward workspace");
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(t.handle, t.w, t.y, t.conv, t.x, t.bwd_data, &b),
        "backward-data workspace");
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(t.handle, t.x, t.y, t.conv, t.w, t.bwd_filter, &c),
        "backward-weights workspace");
  t.work_bytes = std::max({a, b, c});
  if (t.work_bytes) check(cudaMalloc(&t.work, t.work_bytes), "workspace");
}

CudnnConv::~CudnnConv() {
  State& t = *st_;
  if (t.work) cudaFree(t.work);
  if (t.conv) cudnnDestroyConvolutionDescriptor(t.conv);
  if (t.w) cudnnDestroyFilterDescriptor(t.w);
  if (t.y) cudnnDestroyTensorDescriptor(t.y);
  if (t.x) cudnnDestroyTensorDescriptor(t.x);
  if (t.handle) cudnnDestroy(t.handle);
}

// Each pass: y = 1 * op + 0 * y (outputs overwritten), then, with synchronize, wait for it.
namespace {
const float kOne = 1.f, kZero = 0.f;
void finished(cudnnStatus_t st, const char* what, bool sync) {
  check(st, what);
  if (sync) check(cudaDeviceSynchronize(), what);
}
}  // namespace

void CudnnConv::forward(const float* x, const float* w, float* y) {
  const State& t = *st_;
  finished(cudnnConvolutionForward(t.handle, &kOne, t.x, x, t.w, w, t.conv, t.fwd, t.work, t.work_bytes, &kZero,
                                   t.y, y), "cudnnConvolutionForward", sync_);
}

void CudnnConv::backward_data(const float* dy, const float* w, float* dx) {
  const State& t = *st_;
  finished(cudnnConvolutionBackwardData(t.handle, &kOne, t.w, w, t.y, dy, t.conv, t.bwd_data, t.work,
                                        t.work_bytes, &kZero, t.x, dx), "cudnnConvolutionBackwardData", sync_);
}

void CudnnConv::backward_weights(const float* x, const float* dy, float* dw) {
  const State& t = *st_;
  finished(cudnnConvolutionBackwardFilter(t.handle, &kOne, t.x, x, t.y, dy, t.conv, t.bwd_filter, t.work,
                                          t.work_bytes, &kZero, t.w, dw), "cudnnConvolutionBackwardFilter", sync_);
}

// conv.hpp's dispatch on device builds: one CudnnConv per shape (descriptors, algorithms, workspace), made on first
// use and kept per thread like oneDNN's primitives, on the Kokkos kernels' stream and without waiting, so that a
// convolution is ordered between the BatchNorm kernels around it as any kernel is.
namespace detail {
namespace {
CudnnConv& cached(const ConvShape& s) {
  using Key = std::tuple<int, int, int, int, int, int, int, int, int>;
  thread_local std::map<Key, std::unique_ptr<CudnnConv>> convs;
  std::unique_ptr<CudnnConv>& c = convs[Key{s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride, s.pad}];
  if (!c) c = std::make_unique<CudnnConv>(s, device_stream(), /*synchronize=*/false);
  return *c;
}
}  // namespace

bool cudnn_available() { return cuda_device_present(); }
void conv_forward_cudnn(const ConvShape& s, const float* x, const float* w, float* y) { cached(s).forward(x, w, y); }
void conv_backward_data_cudnn(const ConvShape& s, const float* dy, const float* w, float* dx) {
  cached(s).backward_data(dy, w, dx);
}
void conv_backward_weights_cudnn(const ConvShape& s, const float* x, const float* dy, float* dw) {
  cached(s).backward_weights(x, dy, dw);
}
}  // namespace detail

}  // namespace gt::vision
