// Convolution passes that run faster as oneDNN's sgemm than as its convolution primitives (fp32 host builds with
// oneDNN). Channels-last activations are row-major matrices of N*H*W pixel rows by C channels, and the weights'
// O,H,W,I layout a K x (R*S*C) matrix, so these read and write the caller's buffers with no weight reorder.
// Each is an fp32 sum of the same products the convolution sums, in another order.
//  - 1x1 stride 1, no padding: the convolution is one GEMM; both backward passes run as sgemm (one Zen 5 core,
//    ResNet-50's bottleneck shapes at batch 16: backward-weights 116-186 GFLOP/s as a convolution against 139-207
//    as sgemm, backward-data 157-207 against 184-220; the forward, 200-217 either way, stays a convolution).
//  - 3x3 stride 2 with 64 or more input channels: backward-weights as one GEMM over the input's patches gathered
//    into a matrix (im2col), dw(K, 9C) = dy(M, K)^T col(M, 9C). oneDNN 2.6's jit:avx512_core kernel for these
//    ran ResNet-50's three strided 3x3 layers at 79-125 GFLOP/s, the GEMM at 130-150 with the gather included
//    (one Zen 5 core, batch 16, 2026-12-06: 28-36 ms -> 27-29 ms per layer). ResNet-20's 16- and 32-channel
//    strided layers stay on the primitive (not measured this way), and so does the 7x7 stem: with 3 input
//    channels its columns are too narrow for the GEMM (10 GFLOP/s measured per kernel tap).
#include <dnnl.hpp>

#include <algorithm>
#include <vector>

#include "src/vision/buffer.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision::detail {
namespace {

void checked(dnnl::status st, const char* what) {
  if (st != dnnl::status::success) throw dnnl::error(dnnl_status_t(st), what);
}

bool one_by_one(const ConvShape& s) { return !s.bf16 && s.r == 1 && s.s == 1 && s.stride == 1 && s.pad == 0; }

bool strided_patches(const ConvShape& s) {
  return !s.bf16 && s.r == 3 && s.s == 3 && s.stride > 1 && s.c >= 64;
}

// The patch matrix of the rank's thread, grown to the largest need and kept (room_for; the passes run one at a
// time on it; at most the caller's budget of bytes, kPatchBudget in the network: the batch in chunks of images).
std::vector<float>& patches() {
  thread_local std::vector<float> col;
  return col;
}

// col(rows of images [n0, n1), R*S*C) = the input patch under each output pixel, zeros where it hangs over the
// padding; the taps of a row in the weights' (r, s, c) order.
void gather_patches(const ConvShape& s, const float* x, int n0, int n1, float* col) {
  const int oh = s.out_h(), ow = s.out_w();
  float* o = col;
  for (int n = n0; n < n1; ++n)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j)
        for (int r = 0; r < s.r; ++r) {
          const int ih = i * s.stride + r - s.pad;
          for (int q = 0; q < s.s; ++q, o += s.c) {
            const int iw = j * s.stride + q - s.pad;
            if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) std::fill(o, o + s.c, 0.f);
            else std::copy_n(x + ((long(n) * s.h + ih) * s.w + iw) * s.c, s.c, o);
          }
        }
}

}  // namespace

bool gemm_backward_data(const ConvShape& s) { return one_by_one(s); }

bool gemm_backward_weights(const ConvShape& s) { return one_by_one(s) || strided_patches(s); }

// dx(M,C) = dy(M,K) w(K,C) + beta dx(M,C)
void conv_backward_data_gemm(const ConvShape& s, const float* dy, const float* w, float* dx, float beta) {
  const dnnl_dim_t m = dnnl_dim_t(s.n) * s.h * s.w;
  checked(dnnl::sgemm('N', 'N', m, s.c, s.k, 1.0f, dy, s.k, w, s.c, beta, dx, s.c), "sgemm of a 1x1 convolution");
}

void conv_backward_weights_gemm(const ConvShape& s, const float* x, const float* dy, float* dw, size_t budget,
                                float beta) {
  if (one_by_one(s)) {  // dw(K,C) = dy(M,K)^T x(M,C) + beta dw(K,C)
    const dnnl_dim_t m = dnnl_dim_t(s.n) * s.h * s.w;
    return checked(dnnl::sgemm('T', 'N', s.k, s.c, m, 1.0f, dy, s.k, x, s.c, beta, dw, s.c),
                   "sgemm of a 1x1 convolution");
  }
  // dw(K, RSC) = sum over chunks of images of dy(chunk rows, K)^T col(chunk rows, RSC)
  const long pixels = long(s.out_h()) * s.out_w(), rsc = long(s.r) * s.s * s.c;
  const long per_image = pixels * rsc * long(sizeof(float));
  const int chunk = int(std::clamp<long>(long(budget) / per_image, 1, s.n));
  float* col = room_for(patches(), chunk * pixels * rsc);
  for (int n0 = 0; n0 < s.n; n0 += chunk) {
    const int n1 = std::min(s.n, n0 + chunk);
    gather_patches(s, x, n0, n1, col);
    checked(dnnl::sgemm('T', 'N', s.k, rsc, dnnl_dim_t(n1 - n0) * pixels, 1.0f, dy + n0 * pixels * s.k, s.k,
                        col, rsc, n0 == 0 ? beta : 1.0f, dw, rsc),
            "sgemm of a convolution's patches");
  }
}

}  // namespace gt::vision::detail
