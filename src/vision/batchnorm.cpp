// BatchNorm: the per-channel arithmetic (variance, running statistics, sync BN's group sums, the backward's
// coefficients, all in double) around the passes over the activations in kernels/batchnorm.hpp. Sums over rows are
// fp32 within blocks and double across them: M = N*H*W reaches 10^5 per channel at batch 128 on 28x28, where one
// fp32 running sum would lose digits that the variance (a sum of squared deviations) needs.
#include "src/vision/batchnorm.hpp"

#include "kernels/batchnorm.hpp"
#include "src/core/error.hpp"

#include <algorithm>
#include <cmath>

namespace gt::vision {
namespace {

// residual: the end of a residual block, max(0, BN(x) + r) (batchnorm.hpp); otherwise BN(x), ReLU'd with relu
template <class X, class Out>
void affine(bool relu, long rows, int C, const X* x, const float* sub, const float* scale, const float* add,
            const float* residual, Out* y) {
  if (residual)
    batchnorm_affine<true, true>(y, x, sub, scale, add, residual, rows, C);
  else if (relu)
    batchnorm_affine<true, false>(y, x, sub, scale, add, residual, rows, C);
  else
    batchnorm_affine<false, false>(y, x, sub, scale, add, residual, rows, C);
}

// gamma, from memory the kernels address (the trainer's parameters: device memory on device builds), on the host
std::vector<float> host_copy(const float* values, int C) {
  std::vector<float> out(static_cast<size_t>(C));
  copy_to_host(out.data(), values, C);
  return out;
}

}  // namespace

// The per-channel values cross between the kernels and the host's arithmetic in Buffers (buffer.hpp: the same
// memory for both; the layer's scratch in BatchNormSaved), the host reading and rewriting them only after
// device_fence(): each pass waits once, after its sums, for every kernel before it.
template <class X, class Out>
void batchnorm_forward_train(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                             const float* beta, Out* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var, const float* residual) {
  const int C = p.channels;
  double* mean = detail::room_for(saved.sums, 2L * C);  // this rank's mean and squared deviations from it
  double* sq = mean + C;
  if (saved.summed_rows == rows) {  // summed slice by slice as x was written (batchnorm_moments_slice)
    batchnorm_moments_finish(mean, sq, saved.shift.data(), rows, C);
  } else {
    double* partials = detail::room_for(saved.partials, batchnorm_partials_elems(rows, C));
    batchnorm_moments(mean, sq, partials, x, rows, C);
    device_fence();
  }
  saved.summed_rows = 0;
  double n = double(rows);  // the rows the statistics are over: this batch's, or the group's
  if (p.group_sum) {
    // The group's mean from the ranks' sums, then each rank's squared deviations moved to that mean
    // (sq + rows * (mean - group mean)^2) and summed: the group's M2, as if over all its rows at once.
    std::vector<double> sum(C + 1);
    for (int c = 0; c < C; ++c) sum[c] = mean[c] * double(rows);
    sum[C] = double(rows);
    p.group_sum(sum.data(), C + 1);
    n = sum[C];
    for (int c = 0; c < C; ++c) {
      const double group_mean = sum[c] / n, d = mean[c] - group_mean;
      sq[c] += double(rows) * d * d;
      mean[c] = group_mean;
    }
    p.group_sum(sq, C);
  }
  saved.mean.assign(C, 0.f);
  saved.invstd.assign(C, 0.f);
  saved.rows = n;
  for (int c = 0; c < C; ++c) {
    const double var = sq[c] / n;
    saved.mean[c] = float(mean[c]);
    saved.invstd[c] = float(1.0 / std::sqrt(var + p.eps));
    const double unbiased = n > 1 ? sq[c] / (n - 1) : var;
    running_mean[c] = float((1.0 - p.momentum) * running_mean[c] + p.momentum * mean[c]);
    running_var[c] = float((1.0 - p.momentum) * running_var[c] + p.momentum * unbiased);
  }
  const std::vector<float> g = host_copy(gamma, C);
  float* scale = detail::room_for(saved.coef, 4L * C);  // the backward's k, b, d go after it (BatchNormSaved)
  for (int c = 0; c < C; ++c) scale[c] = g[c] * saved.invstd[c];
  affine(p.relu, rows, C, x, saved.mean.data(), scale, beta, residual, y);
}

void batchnorm_moments_slice(const BatchNormParams& p, const float* x, long rows, BatchNormSaved& saved) {
  if constexpr (!kHostBlocking) throw Error("BatchNorm: moments by slices are the host split's");
  const int C = p.channels;
  double* s1 = detail::room_for(saved.sums, 2L * C);
  if (saved.summed_rows == 0) {  // the first slice: its first rows give the shift
    batchnorm_moments_shift(detail::room_for(saved.shift, C), x, rows, C);
    std::fill(s1, s1 + 2L * C, 0.0);
  }
  batchnorm_moments_add(s1, s1 + C, saved.shift.data(), x, rows, C);
  saved.summed_rows += rows;
}

// y = gamma (x - running_mean) / sqrt(running_var + eps) + beta: the deviation first, as in training, so that a
// large mean does not cancel digits. running_mean: where the kernels read (the layer's Buffer)
template <class X, class Out>
void batchnorm_forward_eval(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, Out* y,
                            const float* residual) {
  const int C = p.channels;
  const std::vector<float> g = host_copy(gamma, C);
  Buffer<float> scale(static_cast<size_t>(C));
  for (int c = 0; c < C; ++c) scale[c] = g[c] / std::sqrt(running_var[c] + p.eps);
  affine(p.relu, rows, C, x, running_mean, scale.data(), beta, residual, y);
  device_fence();  // as in training: scale is freed on return
}

namespace {

// The backward's per-channel arithmetic, after its sums (saved.sums: sum(dy), then sum(dy * (x - mean))):
// dgamma, dbeta, and dx's coefficients k, b, d in saved.coef after the forward's scale; returns k.
// dx = gamma * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)), the usual closed form, as
// dx = k * dy + b * (x - mean) + d per channel (k = gamma * invstd, b = -k * invstd * sum(dy * xhat) / M,
// d = -k * sum(dy) / M). dgamma and dbeta are written by the host: they are the network's own gradient array (a
// Buffer), which the stage hands on to the trainer's.
const float* backward_coefficients(const BatchNormParams& p, const float* gamma, const BatchNormSaved& saved,
                                   float* dgamma, float* dbeta) {
  const int C = p.channels;
  double* sdy = saved.sums.data();
  const double* sdyd = sdy + C;
  device_fence();
  std::vector<double> sdyx(C);
  for (int c = 0; c < C; ++c) sdyx[c] = sdyd[c] * double(saved.invstd[c]);
  for (int c = 0; c < C; ++c) {  // this rank's: the DP average of the parameter gradients sums them
    dgamma[c] = float(sdyx[c]);
    dbeta[c] = float(sdy[c]);
  }
  if (p.group_sum) {  // dx needs the sums over every row the statistics were taken over
    std::vector<double> both(sdy, sdy + C);
    both.insert(both.end(), sdyx.begin(), sdyx.end());
    p.group_sum(both.data(), 2 * C);
    std::copy(both.begin(), both.begin() + C, sdy);
    std::copy(both.begin() + C, both.end(), sdyx.begin());
  }
  const double inv_m = 1.0 / saved.rows;
  const std::vector<float> g = host_copy(gamma, C);
  float* k = saved.coef.data() + C;  // sized by the forward (4C)
  float* b = k + C;
  float* d = b + C;
  for (int c = 0; c < C; ++c) {
    const double kc = double(g[c]) * double(saved.invstd[c]);
    k[c] = float(kc);
    b[c] = float(-kc * double(saved.invstd[c]) * sdyx[c] * inv_m);
    d[c] = float(-kc * sdy[c] * inv_m);
  }
  return k;
}

}  // namespace

namespace {

// The backward's sums over all rows, then dgamma, dbeta and dx's coefficients (backward_coefficients). With
// p.relu, dy is first masked where the forward's normalised value was not positive, that value redone from x with
// the forward's mean, scale (kept in saved.coef) and beta.
template <class X, class DY>
void backward_begin(const BatchNormParams& p, long rows, const X* x, const DY* dy, const float* gamma,
                    const float* beta, const BatchNormSaved& saved, float* dgamma, float* dbeta) {
  const int C = p.channels;
  const float* mean = saved.mean.data();
  const float* scale = saved.coef.data();  // the forward's, beside the k, b, d set after the sums
  double* sdy = detail::room_for(saved.sums, 2L * C);  // sum(dy), then sum(dy * (x - mean)) (xhat's sum / invstd)
  double* partials = detail::room_for(saved.partials, batchnorm_partials_elems(rows, C));
  if (p.relu)
    batchnorm_backward_sums<true>(sdy, sdy + C, partials, x, dy, mean, scale, beta, rows, C);
  else
    batchnorm_backward_sums<false>(sdy, sdy + C, partials, x, dy, mean, scale, beta, rows, C);
  backward_coefficients(p, gamma, saved, dgamma, dbeta);
}

// ... at a block's end: the sums over dy = end.dout masked by end.out > 0, which they write to end.g
template <class X>
void backward_begin_block_end(const BatchNormParams& p, long rows, const X* x, const BlockEnd& end,
                              const float* gamma, const BatchNormSaved& saved, float* dgamma, float* dbeta) {
  if (p.relu) throw Error("BatchNorm: a block's end has the ReLU after the sum, not its own (p.relu)");
  const int C = p.channels;
  double* sdy = detail::room_for(saved.sums, 2L * C);
  double* partials = detail::room_for(saved.partials, batchnorm_partials_elems(rows, C));
  batchnorm_backward_sums_block_end(sdy, sdy + C, partials, x, end.out, end.dout, end.g, saved.mean.data(), rows, C);
  backward_coefficients(p, gamma, saved, dgamma, dbeta);
}

// dx for `rows` rows from the coefficients the begin left in saved.coef (dy masked as there when p.relu)
template <class X, class DY, class Out>
void backward_rows(const BatchNormParams& p, long rows, const X* x, const DY* dy, const float* beta,
                   const BatchNormSaved& saved, Out* dx) {
  const int C = p.channels;
  const float* mean = saved.mean.data();
  const float* scale = saved.coef.data();
  const float* k = scale + C;
  if (p.relu)
    batchnorm_backward_dx<true>(dx, x, dy, mean, scale, beta, k, k + C, k + 2 * C, rows, C);
  else
    batchnorm_backward_dx<false>(dx, x, dy, mean, scale, beta, k, k + C, k + 2 * C, rows, C);
}

}  // namespace

template <class X, class DY, class Out>
void batchnorm_backward(const BatchNormParams& p, long rows, const X* x, const DY* dy, const float* gamma,
                        const float* beta, const BatchNormSaved& saved, Out* dx, float* dgamma, float* dbeta) {
  backward_begin(p, rows, x, dy, gamma, beta, saved, dgamma, dbeta);
  backward_rows(p, rows, x, dy, beta, saved, dx);
}

template <class X, class Out>
void batchnorm_backward_block_end(const BatchNormParams& p, long rows, const X* x, const BlockEnd& end,
                                  const float* gamma, const BatchNormSaved& saved, Out* dx, float* dgamma,
                                  float* dbeta) {
  backward_begin_block_end(p, rows, x, end, gamma, saved, dgamma, dbeta);
  backward_rows(p, rows, x, static_cast<const float*>(end.g), nullptr, saved, dx);  // p.relu false: no beta
}

void batchnorm_backward_begin(const BatchNormParams& p, long rows, const float* x, const float* dy,
                              const float* gamma, const float* beta, const BatchNormSaved& saved, float* dgamma,
                              float* dbeta) {
  backward_begin(p, rows, x, dy, gamma, beta, saved, dgamma, dbeta);
}

void batchnorm_backward_begin_block_end(const BatchNormParams& p, long rows, const float* x, const BlockEnd& end,
                                        const float* gamma, const BatchNormSaved& saved, float* dgamma,
                                        float* dbeta) {
  backward_begin_block_end(p, rows, x, end, gamma, saved, dgamma, dbeta);
}

void batchnorm_backward_rows(const BatchNormParams& p, long rows, const float* x, const float* dy, const float* beta,
                             const BatchNormSaved& saved, float* dx) {
  backward_rows(p, rows, x, dy, beta, saved, dx);
}

// The combinations the ResNet uses (fp32 throughout, or bf16 around bf16 convolutions), and the tests.
#define GT_BN_FORWARD(X, O)                                                                                        \
  template void batchnorm_forward_train(const BatchNormParams&, long, const X*, const float*, const float*, O*,   \
                                        BatchNormSaved&, float*, float*, const float*);                           \
  template void batchnorm_forward_eval(const BatchNormParams&, long, const X*, const float*, const float*,        \
                                       const float*, const float*, O*, const float*);
GT_BN_FORWARD(float, float)
GT_BN_FORWARD(float, bf16_bits)
GT_BN_FORWARD(bf16_bits, float)
GT_BN_FORWARD(bf16_bits, bf16_bits)
#undef GT_BN_FORWARD
#define GT_BN_BACKWARD(X, DY, O)                                                                                   \
  template void batchnorm_backward(const BatchNormParams&, long, const X*, const DY*, const float*, const float*, \
                                   const BatchNormSaved&, O*, float*, float*);
// a bf16 dx with each of x and dy in either type: the ResNet's block code instantiates every mix, whichever it runs
#define GT_BN_BACKWARD_BF16_DX(X) GT_BN_BACKWARD(X, float, bf16_bits) GT_BN_BACKWARD(X, bf16_bits, bf16_bits)
GT_BN_BACKWARD(float, float, float)
GT_BN_BACKWARD_BF16_DX(float)
GT_BN_BACKWARD_BF16_DX(bf16_bits)
#undef GT_BN_BACKWARD_BF16_DX
#define GT_BN_BLOCK_END(X, O)                                                                                      \
  template void batchnorm_backward_block_end(const BatchNormParams&, long, const X*, const BlockEnd&, const float*, \
                                             const BatchNormSaved&, O*, float*, float*);
GT_BN_BLOCK_END(float, float)
GT_BN_BLOCK_END(float, bf16_bits)
GT_BN_BLOCK_END(bf16_bits, float)
GT_BN_BLOCK_END(bf16_bits, bf16_bits)
#undef GT_BN_BLOCK_END
#undef GT_BN_BACKWARD

}  // namespace gt::vision
