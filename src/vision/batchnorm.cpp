// BatchNorm kernels. Sums over rows are taken in double: M = N*H*W reaches 10^5 per channel at batch 128 on
// 28x28, where an fp32 running sum would lose digits that the variance (a difference of squares) needs. The
// element-wise parts (the deviation, the normalisation, dx) are fp32 with per-channel constants, so the loops
// over channels vectorise; only the accumulators are double.
#include "src/vision/batchnorm.hpp"

#include <algorithm>
#include <cmath>

namespace gt::vision {

void batchnorm_forward_train(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                             const float* beta, float* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var) {
  const int C = p.channels;
  std::vector<double> sum(C + 1, 0.0), sq(C, 0.0);  // sum[C]: the rows (summed over the group with the sums)
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) sum[c] += x[m * C + c];
  sum[C] = double(rows);
  if (p.group_sum) p.group_sum(sum.data(), C + 1);
  const double n = sum[C];  // the rows the statistics are over: this batch's, or the group's
  for (int c = 0; c < C; ++c) sum[c] /= n;
  // the deviations from the (group's) mean in a second pass: a difference of squares would lose the digits
  std::vector<float> mean_f(sum.begin(), sum.begin() + C);  // the fp32 mean the deviations are taken from
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const float d = x[m * C + c] - mean_f[c];
      sq[c] += double(d * d);
    }
  if (p.group_sum) p.group_sum(sq.data(), C);
  saved.mean.assign(C, 0.f);
  saved.invstd.assign(C, 0.f);
  saved.rows = n;
  for (int c = 0; c < C; ++c) {
    const double var = sq[c] / n;
    saved.mean[c] = float(sum[c]);
    saved.invstd[c] = float(1.0 / std::sqrt(var + p.eps));
    const double unbiased = n > 1 ? sq[c] / (n - 1) : var;
    running_mean[c] = float((1.0 - p.momentum) * running_mean[c] + p.momentum * sum[c]);
    running_var[c] = float((1.0 - p.momentum) * running_var[c] + p.momentum * unbiased);
  }
  std::vector<float> scale(C);
  for (int c = 0; c < C; ++c) scale[c] = gamma[c] * saved.invstd[c];
  const float* mean = saved.mean.data();
  for (long m = 0; m < rows; ++m) {
    const float* xr = x + m * C;
    float* yr = y + m * C;
    if (p.relu)
      for (int c = 0; c < C; ++c) yr[c] = std::max(0.f, (xr[c] - mean[c]) * scale[c] + beta[c]);
    else
      for (int c = 0; c < C; ++c) yr[c] = (xr[c] - mean[c]) * scale[c] + beta[c];
  }
}

void batchnorm_forward_eval(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y) {
  const int C = p.channels;
  std::vector<float> scale(C), shift(C);
  for (int c = 0; c < C; ++c) {
    scale[c] = gamma[c] / std::sqrt(running_var[c] + p.eps);
    shift[c] = beta[c] - running_mean[c] * scale[c];
  }
  for (long m = 0; m < rows; ++m) {
    const float* xr = x + m * C;
    float* yr = y + m * C;
    if (p.relu)
      for (int c = 0; c < C; ++c) yr[c] = std::max(0.f, xr[c] * scale[c] + shift[c]);
    else
      for (int c = 0; c < C; ++c) yr[c] = xr[c] * scale[c] + shift[c];
  }
}

// dx = gamma * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)), the usual closed form, as
// dx = k * dy + b * (x - mean) + d per channel (k = gamma * invstd, b = -k * invstd * sum(dy * xhat) / M,
// d = -k * sum(dy) / M); with p.relu, dy is first masked by y > 0.
void batchnorm_backward(const BatchNormParams& p, long rows, const float* x, const float* y, const float* dy,
                        const float* gamma, const BatchNormSaved& saved, float* dx, float* dgamma, float* dbeta) {
  const int C = p.channels;
  const float* mean = saved.mean.data();
  auto grad = [&](long i) { return p.relu && !(y[i] > 0.f) ? 0.f : dy[i]; };
  std::vector<double> sdy(C, 0.0), sdyd(C, 0.0);  // sum(dy), sum(dy * (x - mean)) (xhat's sum / invstd)
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const long i = m * C + c;
      const float g = grad(i);
      sdy[c] += double(g);
      sdyd[c] += double(g * (x[i] - mean[c]));
    }
  std::vector<double> sdyx(C);
  for (int c = 0; c < C; ++c) sdyx[c] = sdyd[c] * double(saved.invstd[c]);
  for (int c = 0; c < C; ++c) {  // this rank's: the DP average of the parameter gradients sums them
    dgamma[c] = float(sdyx[c]);
    dbeta[c] = float(sdy[c]);
  }
  if (p.group_sum) {  // dx needs the sums over every row the statistics were taken over
    std::vector<double> both(sdy);
    both.insert(both.end(), sdyx.begin(), sdyx.end());
    p.group_sum(both.data(), 2 * C);
    std::copy(both.begin(), both.begin() + C, sdy.begin());
    std::copy(both.begin() + C, both.end(), sdyx.begin());
  }
  const double inv_m = 1.0 / saved.rows;
  std::vector<float> k(C), b(C), d(C);
  for (int c = 0; c < C; ++c) {
    const double kc = double(gamma[c]) * double(saved.invstd[c]);
    k[c] = float(kc);
    b[c] = float(-kc * double(saved.invstd[c]) * sdyx[c] * inv_m);
    d[c] = float(-kc * sdy[c] * inv_m);
  }
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const long i = m * C + c;
      dx[i] = k[c] * grad(i) + b[c] * (x[i] - mean[c]) + d[c];
    }
}

}  // namespace gt::vision
