#pragma once
// Vocab-parallel cross-entropy emulated on one process, for the kernel tests of every T (float, double, bf16,
// fp16): the (N, V) logits cut into column shards at bounds (bounds[0] = 0, the last = V), each shard's kernels
// run, and the all-reduces done here: MAX of the shards' row maxima, SUM of their sums of exponentials and of
// their target logits, in acc_t<T> as the kernels keep them.
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/crossentropy.hpp"
#include "tests/kernels/test_util.hpp"

namespace kt {

template <class T>
struct ShardedCe {
  using A = gt::acc_t<T>;
  int N;
  std::vector<int> bounds;
  std::vector<DVec<T>> shard;  // (N, bounds[s + 1] - bounds[s]) each
  DVec<A> gmax, gsum, glogit;  // (N) each, reduced over the shards

  // logits: (N, V), converted to T through float (to<T>); tgt: (N) global vocabulary ids.
  ShardedCe(const Vec& logits, std::vector<int> b, const DVec<int32_t>& tgt, int n)
      : N(n), bounds(std::move(b)), shard(bounds.size() - 1), gmax(n), gsum(n, A(0)), glogit(n, A(0)) {
    const int S = int(shard.size()), V = bounds.back();
    std::vector<DVec<A>> rowmax(S), sumexp(S), tlogit(S);
    for (int s = 0; s < S; ++s) {
      const int v0 = bounds[s], Vl = bounds[s + 1] - v0;
      Vec h;
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < Vl; ++j) h.push_back(logits[size_t(i) * V + v0 + j]);
      shard[s] = to<T>(h);
      rowmax[s] = poisoned<A>(N);
      gt::ce_row_max(rowmax[s].data(), shard[s].data(), N, Vl);
    }
    for (int i = 0; i < N; ++i) {
      gmax[i] = rowmax[0][i];
      for (int s = 1; s < S; ++s) gmax[i] = std::max(gmax[i], rowmax[s][i]);
    }
    for (int s = 0; s < S; ++s) {
      const int v0 = bounds[s], Vl = bounds[s + 1] - v0;
      sumexp[s] = poisoned<A>(N);
      tlogit[s] = poisoned<A>(N);
      gt::ce_row_sumexp(sumexp[s].data(), tlogit[s].data(), shard[s].data(), gmax.data(), tgt.data(), N, Vl, v0);
      for (int i = 0; i < N; ++i) {
        gsum[i] += sumexp[s][i];
        glogit[i] += tlogit[s][i];
      }
    }
  }

  // dlogits (N, V): each shard's ce_backward_inplace (in place: the shards hold gradients afterwards), gathered.
  Vec backward(const DVec<int32_t>& tgt, A scale) {
    const int V = bounds.back();
    Vec dl(size_t(N) * V);
    for (size_t s = 0; s < shard.size(); ++s) {
      const int v0 = bounds[s], Vl = bounds[s + 1] - v0;
      gt::ce_backward_inplace(shard[s].data(), gmax.data(), gsum.data(), tgt.data(), N, Vl, v0, scale);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < Vl; ++j) dl[size_t(i) * V + v0 + j] = shard[s][size_t(i) * Vl + j];
    }
    return dl;
  }
};

}  // namespace kt
