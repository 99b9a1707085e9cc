#pragma once
// Column sums over rows on the device split (kernels/lanes.hpp): out[k][c] += sum_{i<N} term_k(i, c), k < K.
// One thread per column would leave most of a GPU idle (C = 768 columns, a few hundred threads against the
// ~270k an H200 holds) and walk all N = B*T rows serially. Two levels instead, each in a fixed order:
//   pass 1: one work item per (row chunk, column) adds the kColsumRows rows of its chunk, in row order, into
//           partials[k][chunk][c]; consecutive items take consecutive columns, so a warp reads one row's
//           contiguous columns (coalesced);
//   pass 2: one work item per (k, column) adds its partials in chunk order onto out[k][c].
// No atomics and no thread-count-dependent tree: the same bits on every run and every GPU, and a result that
// depends on N but not on how the device schedules the items. The host split never calls this: its kernels
// keep their column-block loops (rows in order per column), and with them the CPU build's bits.
#include <string>

#include "kernels/lanes.hpp"
#include "kernels/work_sizes.hpp"

namespace gt {

// Partials the column sums of N rows of `cols` columns need on this build's split (0 on the host split).
inline long colsum_partials_elems(long N, long cols) { return colsum_partials_elems(N, cols, !kHostBlocking); }

// out: K pointers to (C) acc   partials: >= colsum_partials_elems(N, K*C), overwritten
// add_row(i, c, acc): acc[k] += term_k(i, c) for k < K (a KOKKOS_LAMBDA; called for rows i in order)
template <int K, class A, class AddRow>
void column_sums(const std::string& name, Kokkos::Array<A*, K> out, A* partials, long N, int C, AddRow add_row) {
  const long chunks = (N + kColsumRows - 1) / kColsumRows;
  Kokkos::parallel_for(name + "_rows", range(0, chunks * C), KOKKOS_LAMBDA(long item) {
    const long chunk = item / C;
    const int c = static_cast<int>(item % C);
    const long i0 = chunk * kColsumRows;
    const long i1 = i0 + kColsumRows < N ? i0 + kColsumRows : N;
    A acc[K] = {};
    for (long i = i0; i < i1; ++i) add_row(i, c, acc);
    for (int k = 0; k < K; ++k) partials[(k * chunks + chunk) * C + c] = acc[k];
  });
  Kokkos::parallel_for(name + "_partials", range(0, long(K) * C), KOKKOS_LAMBDA(long item) {
    const int k = static_cast<int>(item / C);
    const int c = static_cast<int>(item % C);
    const A* p = partials + k * chunks * C + c;
    A s = 0;
    for (long chunk = 0; chunk < chunks; ++chunk) s += p[chunk * C];
    out[k][c] += s;
  });
}

}  // namespace gt
