// BatchNorm kernels. Sums over rows are taken in double: M = N*H*W reaches 10^5 per channel at batch 128 on
// 28x28, where an fp32 running sum would lose digits that the variance (a difference of squares) needs.
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
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const double d = x[m * C + c] - sum[c];
      sq[c] += d * d;
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
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c)
      y[m * C + c] = gamma[c] * (x[m * C + c] - saved.mean[c]) * saved.invstd[c] + beta[c];
}

void batchnorm_forward_eval(const BatchNormParams& p, long rows, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y) {
  const int C = p.channels;
  std::vector<float> scale(C), shift(C);
  for (int c = 0; c < C; ++c) {
    scale[c] = gamma[c] / std::sqrt(running_var[c] + p.eps);
    shift[c] = beta[c] - running_mean[c] * scale[c];
  }
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) y[m * C + c] = x[m * C + c] * scale[c] + shift[c];
}

// dx = gamma * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)), the usual closed form.
void batchnorm_backward(const BatchNormParams& p, long rows, const float* x, const float* dy, const float* gamma,
                        const BatchNormSaved& saved, float* dx, float* dgamma, float* dbeta) {
  const int C = p.channels;
  std::vector<double> sdy(C, 0.0), sdyx(C, 0.0);
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[m * C + c] - saved.mean[c]) * double(saved.invstd[c]);
      sdy[c] += dy[m * C + c];
      sdyx[c] += dy[m * C + c] * xhat;
    }
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
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[m * C + c] - saved.mean[c]) * double(saved.invstd[c]);
      const double g = dy[m * C + c] - sdy[c] * inv_m - xhat * sdyx[c] * inv_m;
      dx[m * C + c] = float(gamma[c] * double(saved.invstd[c]) * g);
    }
}

}  // namespace gt::vision
