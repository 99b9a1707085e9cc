#pragma once
// The MLP's first layer with its GELU: out = gelu(inp @ weight^T + bias), keeping in `pre` what the backward
// needs. Host split: exactly linear_forward (bias-filled rows, GEMM with beta 1) then gelu_forward, pre being
// the biased pre-activation, the CPU build's bits. Device split, where every pass over the (N, OUT) activation is
// memory traffic: the GEMM writes inp @ weight^T into pre (beta 0, no bias pass, C not read) and one kernel per
// element adds the bias in A and applies GELU, writing out only; the backward adds the bias again from pre. Three
// passes over (N, OUT) instead of five (bias fill, GEMM read and write, GELU read and write) and one launch less.
// For a 16-bit T the GELU input is rounded once either way: before, the GEMM rounded product + bias to T; here it
// rounds the product, and the bias is added in fp32.
#include "kernels/gelu.hpp"
#include "kernels/linear.hpp"

namespace gt {

// inp (N,IN)  weight (OUT,IN)  bias (OUT) or nullptr   out (N,OUT) set   pre (N,OUT) set: what gelu_bias_backward
// takes (the pre-activation on the host split, the pre-activation less the bias on the device split)
template <class T>
void linear_gelu_forward(T* pre, T* out, const T* inp, const T* weight, const no_deduce_t<T>* bias, int N, int IN,
                         int OUT) {
  using A = acc_t<T>;
  if constexpr (kHostBlocking) {
    linear_forward(pre, inp, weight, bias, N, IN, OUT);
    gelu_forward(out, pre, long(N) * OUT);
  } else {
    gemm(Op::N, Op::T, N, OUT, IN, A(1), inp, IN, weight, IN, A(0), pre, OUT);
    Kokkos::parallel_for("bias_gelu_forward", range(0, long(N) * OUT), KOKKOS_LAMBDA(long e) {
      const A x = bias != nullptr ? A(pre[e]) + A(bias[e % OUT]) : A(pre[e]);
      out[e] = T(detail::gelu_value(x));
    });
  }
}

// dout (N,OUT) = dL/d out   pre, bias: as given to linear_gelu_forward   dpre (N,OUT) set = dL/d(pre-activation),
// the input of linear_backward (whose column sums of it are the bias gradient)
template <class T>
void gelu_bias_backward(T* dpre, const T* pre, const no_deduce_t<T>* bias, const T* dout, int N, int OUT) {
  using A = acc_t<T>;
  if constexpr (kHostBlocking) {
    gelu_backward(dpre, pre, dout, long(N) * OUT);
  } else {
    Kokkos::parallel_for("bias_gelu_backward", range(0, long(N) * OUT), KOKKOS_LAMBDA(long e) {
      const A x = bias != nullptr ? A(pre[e]) + A(bias[e % OUT]) : A(pre[e]);
      dpre[e] = T(detail::gelu_grad_times(x, A(dout[e])));
    });
  }
}

}  // namespace gt
