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

// What backward needs from the forward pass: the per-channel batch mean and 1/sqrt(var + eps).
struct BatchNormSaved {
  std::vector<float> mean, invstd;
  double rows = 0;  // the rows the statistics were over (the group's with sync BN)
};

void batchnorm_forward_train(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                             const float* beta, float* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var);
void batchnorm_forward_eval(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y);
// The same with y rounded to bf16 as it is written: the input of a bf16 convolution (the ResNet's units), with no
// fp32 copy and no conversion pass. The statistics are the fp32 x's, as above.
void batchnorm_forward_train(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                             const float* beta, bf16_bits* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var);
void batchnorm_forward_eval(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, bf16_bits* y);
// dx overwritten; dgamma and dbeta overwritten (per channel). y: the forward's output, read only with p.relu
// (the gradient flows where y > 0); may be null otherwise.
void batchnorm_backward(const BatchNormParams& p, long rows, const float* x, const float* y, const float* dy,
                        const float* gamma, const BatchNormSaved& saved, float* dx, float* dgamma, float* dbeta);
// The same with dx rounded to bf16 as it is written: the gradient a bf16 convolution reads (the ResNet's units),
// without an fp32 copy and a conversion pass.
void batchnorm_backward(const BatchNormParams& p, long rows, const float* x, const float* y, const float* dy,
                        const float* gamma, const BatchNormSaved& saved, bf16_bits* dx, float* dgamma, float* dbeta);
// ... and with the forward's output in bf16 (its ReLU mask read from it: y > 0 is the same test on the rounded value,
// except for positive values below bf16's smallest, 9e-41, which round to 0)
void batchnorm_backward(const BatchNormParams& p, long rows, const float* x, const bf16_bits* y, const float* dy,
                        const float* gamma, const BatchNormSaved& saved, bf16_bits* dx, float* dgamma, float* dbeta);

}  // namespace gt::vision
