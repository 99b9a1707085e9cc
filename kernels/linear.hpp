#pragma once
// Fully connected layer, PyTorch layout: weight (OUT,IN), out = inp @ weight^T + bias. The products go
// through gt::gemm (BLAS on host, cuBLAS on device); only the bias handling is a Kokkos kernel. No fences:
// cuBLAS runs on the Kokkos stream (kernels/device_stream.hpp), host BLAS and Serial kernels run in call order.
// Storage type T for activations and weights; with a 16-bit T the GEMMs take T inputs and accumulate in fp32,
// and the weight and bias gradients are fp32 (A = acc_t<T>: the fp32 gradient buffer, beta = 1).
#include "kernels/colsum.hpp"
#include "kernels/gemm.hpp"
#include "kernels/lanes.hpp"

namespace gt {

// inp: (N,IN)  weight: (OUT,IN)  bias: (OUT) or nullptr  out: (N,OUT) set
template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const no_deduce_t<T>* bias, int N, int IN, int OUT) {
  acc_t<T> beta = 0;
  if (bias != nullptr) {
    // rows start as the bias, then the GEMM accumulates onto them (one pass over out instead of two); one work
    // item per row on the host split, per element on the device split (consecutive threads, consecutive columns)
    if constexpr (kHostBlocking) {
      Kokkos::parallel_for("linear_forward_bias", range(0, N), KOKKOS_LAMBDA(long i) {
        T* o = out + i * OUT;
        GT_IVDEP
        for (int j = 0; j < OUT; ++j) o[j] = bias[j];
      });
    } else {
      Kokkos::parallel_for("linear_forward_bias", range(0, long(N) * OUT),
                           KOKKOS_LAMBDA(long e) { out[e] = bias[e % OUT]; });
    }
    beta = 1;
  }
  gemm(Op::N, Op::T, N, OUT, IN, acc_t<T>(1), inp, IN, weight, IN, beta, out, OUT);
}

// dout: (N,OUT)  inp: (N,IN)  weight: (OUT,IN)
// dinp: (N,IN) set (skipped if nullptr)  dweight: (OUT,IN) acc  dbias: (OUT) acc (skipped if nullptr)
// partials: colsum_partials_elems(N, OUT) scratch for dbias's column sums on the device split (else unused)
template <class T>
void linear_backward(no_deduce_t<T>* dinp, acc_t<T>* dweight, acc_t<T>* dbias, acc_t<T>* partials, const T* dout,
                     const T* inp, const T* weight, int N, int IN, int OUT) {
  using A = acc_t<T>;
  if (dinp != nullptr) gemm(Op::N, Op::N, N, IN, OUT, A(1), dout, OUT, weight, IN, A(0), dinp, IN);
  gemm(Op::T, Op::N, OUT, IN, N, A(1), dout, OUT, inp, IN, A(1), dweight, IN);
  if (dbias == nullptr) return;
  if constexpr (!kHostBlocking) {  // two levels, fixed order (colsum.hpp)
    column_sums<1>("linear_backward_dbias", Kokkos::Array<A*, 1>{{dbias}}, partials, N, OUT,
                   KOKKOS_LAMBDA(long i, int c, A* acc) { acc[0] += A(dout[i * OUT + c]); });
  } else {
    const int nblk = col_block_count(OUT);
    Kokkos::parallel_for("linear_backward_dbias", range(0, nblk), KOKKOS_LAMBDA(long blk) {
      const int c0 = static_cast<int>(blk) * kColBlock;
      const int c1 = c0 + kColBlock < OUT ? c0 + kColBlock : OUT;
      for (long i = 0; i < N; ++i) {
        const T* g = dout + i * OUT;
        for (int c = c0; c < c1; ++c) dbias[c] += A(g[c]);
      }
    });
  }
}

}  // namespace gt
