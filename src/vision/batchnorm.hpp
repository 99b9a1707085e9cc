#pragma once
// BatchNorm over channels-last activations (M = N*H*W rows of C channels). Training uses the batch's statistics
// (biased variance, as the normalisation itself) and updates the running statistics (unbiased variance, as
// PyTorch does); evaluation uses the running statistics. Statistics are this process's batch's, or, with a group
// sum (model.sync_bn), the whole DP group's batch's: the forward's sums (count, mean, squared deviations) and the
// backward's two sums that dx needs are summed over the group (PyTorch's SyncBatchNorm), while dgamma and dbeta
// stay this rank's (the DP gradient average adds them up, as for every parameter).
#include <functional>
#include <vector>

#include "src/vision/bf16.hpp"
#include "src/vision/buffer.hpp"

namespace gt::vision {

struct BatchNormParams {
  int channels = 0;
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
  // y = max(0, BN(x)): the ReLU that follows most BatchNorms done in the same pass over memory, and in backward
  // its mask (y > 0) applied to dy while it is read, instead of two more passes each way.
  bool relu = false;
  // Sync BN: sums n doubles in place over the DP group (collective: every rank's BatchNorm calls it alike);
  // empty: per-rank statistics.
  std::function<void(double* values, int n)> group_sum;
};

// What backward needs from the forward pass: the per-channel batch mean and 1/sqrt(var + eps) (in a Buffer: the
// backward's kernels read the mean).
struct BatchNormSaved {
  Buffer<float> mean, invstd;
  // The training passes' scratch, kept with the layer between steps (mutable: scratch, not state, and the backward
  // takes the saved values const): on device builds a Buffer is managed memory, whose allocation and release on
  // every pass would cost more than a pass over a small map. Grows only (detail::room_for).
  mutable Buffer<double> sums, partials;  // 2C per-channel sums; the device split's column-sum partials
  // per channel: the forward's scale (C; the backward's ReLU mask redoes the forward's value with it), then the
  // backward's k, b, d (3C)
  mutable Buffer<float> coef;
  double rows = 0;  // the rows the statistics were over (the group's with sync BN)
  // batchnorm_moments_slice: the shift of the shifted sums (in `sums`), and how many rows those sums are over so
  // far (0: none pending)
  Buffer<float> shift;
  long summed_rows = 0;
};

// The next batchnorm_forward_train's moments taken a slice of rows at a time, each slice of x as soon as it is
// written, while it is in cache (ResBlock::forward, where a convolution runs over slices of images), in order from
// the first row. The next batchnorm_forward_train over exactly that many rows (the same x) uses these sums instead
// of a pass of its own over x; any other clears them. fp32 x on the host split.
void batchnorm_moments_slice(const BatchNormParams& p, const float* x, long rows, BatchNormSaved& saved);

// X, the input: fp32, or bf16 (a bf16 convolution's output: statistics and normalisation read it widened, half the
// bytes). Out, the output: fp32, or bf16 rounded as it is written (the input of a bf16 convolution, with no fp32
// copy and no conversion pass). Instantiated for both types of each (batchnorm.cpp).
// residual (rows x C, or null): y = max(0, BN(x) + residual), the end of a residual block (its last BatchNorm has
// no ReLU of its own: p.relu false): the shortcut added and the block's ReLU in the same pass, so BN(x) is never
// stored. Backward is unchanged: the caller masks the gradient by y > 0, which the shortcut needs as well.
template <class X, class Out>
void batchnorm_forward_train(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                             const float* beta, Out* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var, const float* residual = nullptr);
template <class X, class Out>
void batchnorm_forward_eval(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, Out* y,
                            const float* residual = nullptr);
// dx overwritten (fp32, or bf16: the gradient a bf16 convolution reads); dgamma and dbeta overwritten (per channel).
// x, gamma, beta: the forward's (the last batchnorm_forward_train with this `saved`). With p.relu the gradient
// flows where the forward's value before its ReLU was positive, that value redone from x (the same fused
// multiply-add, so the same bits: kernels/batchnorm.hpp), not read back from its output: an activation fewer to
// read twice. (A bf16 output rounds positive values below about 1e-40 to 0; the mask passes them, as the fp32
// forward's.) DY, the output gradient: fp32, or bf16 (written so by the bf16 convolution after this BatchNorm in a
// residual block); the sums over it are fp32/double either way. Instantiated for (X, dy, dx) = fp32 throughout,
// and for a bf16 dx with either of x and dy in bf16 (batchnorm.cpp).
template <class X, class DY, class Out>
void batchnorm_backward(const BatchNormParams& p, long rows, const X* x, const DY* dy, const float* gamma,
                        const float* beta, const BatchNormSaved& saved, Out* dx, float* dgamma, float* dbeta);

// The end of a residual block: the forward ran with a residual (y = max(0, BN(x) + r), p.relu false), so the
// gradient of BN(x) and of r alike is the block output's gradient where the output is positive.
//   out, dout: the block output (the forward's y) and its gradient; g: receives dout masked by out > 0
struct BlockEnd {
  const float* out;
  const float* dout;
  float* g;
};
// batchnorm_backward with dy = end.dout masked by end.out > 0, written to end.g in the pass that takes the
// backward's sums (so the shortcut reads it, and no ReLU pass of its own reads out and dout and writes g first).
// gt::Error when p.relu. Instantiated for x and dx each fp32 or bf16.
template <class X, class Out>
void batchnorm_backward_block_end(const BatchNormParams& p, long rows, const X* x, const BlockEnd& end,
                                  const float* gamma, const BatchNormSaved& saved, Out* dx, float* dgamma,
                                  float* dbeta);

// The same backward in two steps, for a caller that makes dx a slice of rows at a time and hands each slice on
// while it is in cache (the convolution before this BatchNorm: ResNet units, ConvLayer::backward_slices):
// batchnorm_backward_begin takes the sums over all rows and writes dgamma, dbeta and dx's coefficients (into
// saved); then batchnorm_backward_rows writes dx for any rows, x, dy and dx pointing at the first of them. dy is
// the gradient the sums read (at a block's end: end.g, which the begin wrote). fp32 only.
//   x, dy, dx: (rows, C) of the slice   gamma, beta: the forward's
void batchnorm_backward_begin(const BatchNormParams& p, long rows, const float* x, const float* dy,
                              const float* gamma, const float* beta, const BatchNormSaved& saved, float* dgamma,
                              float* dbeta);
void batchnorm_backward_begin_block_end(const BatchNormParams& p, long rows, const float* x, const BlockEnd& end,
                                        const float* gamma, const BatchNormSaved& saved, float* dgamma,
                                        float* dbeta);
void batchnorm_backward_rows(const BatchNormParams& p, long rows, const float* x, const float* dy, const float* beta,
                             const BatchNormSaved& saved, float* dx);

}  // namespace gt::vision
