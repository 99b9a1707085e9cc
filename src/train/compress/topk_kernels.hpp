#pragma once
// Kokkos kernels of top-k compression for GPU builds (topk_device.cpp): the selection, error feedback's take, and
// the scatter of received pairs, on device memory, each the same function of its inputs as the host code of
// topk.cpp / topk_allreduce.cpp (the same selected set, the same residual and sum bits). One shape for every
// build: on a CPU build they run on the host execution space, where the tests compare them with the host code.
//
// Selection by radix select, no sort and no floating-point atomics: the ranking key of select_exact (|x|, NaN as
// +inf) read as its IEEE bits, which for non-negative floats order as the values do. Four passes, one per byte
// from the top: a 256-bin histogram of the keys that match the digits found so far (integer counts: exact,
// whatever the order of the atomic increments), then one work item finds the byte holding the k-th largest.
// After the last pass the state holds the k-th largest key t and how many keys equal to t to take (ties go to
// the lower index, as select_exact's do); a scan then writes the selected indices in ascending order.
// Nothing returns to the host: 10 small launches per selection, the state stays in device memory.
#include <cstdint>
#include <type_traits>

#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt::compress {

// Device state of one radix select: the k-th largest key's bits found so far (prefix, under mask), how many of
// the keys under the prefix are still to take (remaining), and the current pass's histogram.
struct RadixState {
  uint32_t prefix, mask;
  int64_t remaining;
  int32_t hist[256];
};

// select_exact's ranking key as ordered bits: |x|, NaN ranked as +inf.
KOKKOS_INLINE_FUNCTION uint32_t key_bits(float x) {
  const uint32_t b = half_detail::float_bits(x) & 0x7FFFFFFFu;
  return b > 0x7F800000u ? 0x7F800000u : b;
}

namespace detail {

constexpr int kHistTeams = 512;  // teams of a histogram pass (each strides its share of the keys)

// One pass: histogram of byte `shift` of the keys whose higher bytes match the prefix, in team scratch, then
// added to the state's histogram (integer atomics: the counts do not depend on the order).
inline void radix_histogram(RadixState* st, const float* x, long n, int shift) {
  using Policy = Kokkos::TeamPolicy<exec_space>;
  using Scratch = Kokkos::View<int32_t*, exec_space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const long teams = n < 256L * kHistTeams ? (n + 255) / 256 : kHistTeams;
  if (teams == 0) return;
  Policy policy = Policy(teams, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(256)));
  Kokkos::parallel_for("topk_radix_histogram", policy, KOKKOS_LAMBDA(const Policy::member_type& team) {
    Scratch h(team.team_scratch(0), 256);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 256), [&](int d) { h(d) = 0; });
    team.team_barrier();
    const uint32_t prefix = st->prefix, mask = st->mask;
    const long per = (n + teams - 1) / teams, i0 = team.league_rank() * per;
    const long i1 = i0 + per < n ? i0 + per : n;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, i0, i1 > i0 ? i1 : i0), [&](long i) {
      const uint32_t b = key_bits(x[i]);
      if ((b & mask) == prefix) Kokkos::atomic_add(&h((b >> shift) & 0xFFu), 1);
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 256), [&](int d) {
      if (h(d) != 0) Kokkos::atomic_add(&st->hist[d], h(d));
    });
  });
}

// One work item: the byte holding the remaining-th largest key under the prefix; clears the histogram.
inline void radix_digit(RadixState* st, int shift) {
  Kokkos::parallel_for("topk_radix_digit", range(0, 1), KOKKOS_LAMBDA(long) {
    int64_t above = 0;
    int d = 255;
    for (; d > 0 && above + st->hist[d] < st->remaining; --d) above += st->hist[d];
    st->remaining -= above;
    st->prefix |= uint32_t(d) << shift;
    st->mask |= 0xFFu << shift;
    for (int j = 0; j < 256; ++j) st->hist[j] = 0;
  });
}

}  // namespace detail

// The k-th largest key of x[0..n) (1 <= k <= n) into st: st->prefix = its bits, st->remaining = how many keys
// equal to it belong to the top k (k minus the keys above it).
inline void radix_select(RadixState* st, const float* x, long n, long k) {
  Kokkos::parallel_for("topk_radix_init", range(0, 1), KOKKOS_LAMBDA(long) {
    st->prefix = 0;
    st->mask = 0;
    st->remaining = k;
    for (int j = 0; j < 256; ++j) st->hist[j] = 0;
  });
  for (int shift = 24; shift >= 0; shift -= 8) {
    detail::radix_histogram(st, x, n, shift);
    detail::radix_digit(st, shift);
  }
}

// idx[0..k) = the indices, ascending, of the top k of x[0..n) found by radix_select(st, x, n, k): every key above
// st->prefix, and the first st->remaining keys equal to it. One scan; each item's count of earlier keys above
// and equal (packed in one 64-bit sum, 32 bits each: n < 2^31) gives its slot.
inline void compact_selected(int32_t* idx, const RadixState* st, const float* x, long n) {
  Kokkos::parallel_scan("topk_compact", range(0, n), KOKKOS_LAMBDA(long i, int64_t& before, bool final) {
    const uint32_t b = key_bits(x[i]), t = st->prefix;
    const int64_t mine = b > t ? (int64_t(1) << 32) : b == t ? int64_t(1) : int64_t(0);
    if (final && mine != 0) {
      const int64_t above = before >> 32, equal = before & 0xFFFFFFFF;
      const int64_t ties = st->remaining;
      if (b > t) idx[above + (equal < ties ? equal : ties)] = int32_t(i);
      else if (equal < ties) idx[above + equal] = int32_t(i);
    }
    before += mine;
  });
}

// The number of keys >= thr (select_sampled's count).
inline long count_at_least(const float* x, long n, float thr) {
  const uint32_t t = half_detail::float_bits(thr);
  long count = 0;
  Kokkos::parallel_reduce("topk_count", range(0, n), KOKKOS_LAMBDA(long i, long& c) { c += key_bits(x[i]) >= t; },
                          count);
  return count;
}

// select_sampled's draw: sample[j] = key of x[g_j mod n], g_j the j-th output of splitmix64 from `seed` (topk.cpp's
// mix: the state advances by a constant per draw, so draw j is computed from seed + (j+1) * 0x9E37... directly).
inline void sample_keys(float* sample, long s, const float* x, long n, uint64_t seed) {
  Kokkos::parallel_for("topk_sample", range(0, s), KOKKOS_LAMBDA(long j) {
    uint64_t z = seed + uint64_t(j + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    sample[j] = half_detail::bits_float(key_bits(x[z % uint64_t(n)]));
  });
}

// ErrorFeedback::take on device memory: val[j] = V(r[idx[j]]) (a finite value beyond V's range saturated),
// r[idx[j]] -= float(val[j]); idx < 0 is padding (val 0, nothing taken). idx == nullptr: every entry, j = 0..k.
// Indices are distinct (a selection), so no two items touch one entry.
template <class V>
KOKKOS_INLINE_FUNCTION float max_finite_of() {  // the largest finite value of a wire type (topk.cpp's max_finite)
  return std::is_same<V, fp16_t>::value   ? 65504.0f
         : std::is_same<V, bf16_t>::value ? half_detail::bf16_to_float(0x7F7Fu)
                                          : 3.40282346638528859812e+38f;
}
KOKKOS_INLINE_FUNCTION bool is_finite_bits(float x) {
  return (half_detail::float_bits(x) & 0x7F800000u) != 0x7F800000u;
}

template <class V>
void take(float* r, const int32_t* idx, long k, V* val) {
  Kokkos::parallel_for("topk_take", range(0, k), KOKKOS_LAMBDA(long j) {
    const long i = idx == nullptr ? j : long(idx[j]);
    if (i < 0) {
      val[j] = V(0.0f);
      return;
    }
    const float a = r[i];
    V v = V(a);
    if (is_finite_bits(a) && !is_finite_bits(float(v))) v = V(a < 0 ? -max_finite_of<V>() : max_finite_of<V>());
    val[j] = v;
    r[i] = a - float(v);
  });
}

// out[idx[j]] += float(val[j]) for j < k with idx[j] >= 0: one rank's pairs (distinct indices, so no two items
// touch one entry). Called once per rank in rank order, it adds as the host loop does.
template <class V>
void scatter_add(float* out, const int32_t* idx, const V* val, long k) {
  Kokkos::parallel_for("topk_scatter_add", range(0, k), KOKKOS_LAMBDA(long j) {
    if (idx[j] >= 0) out[idx[j]] += float(val[j]);
  });
}

// out[idx[j]] = float(val[j]) for j < k with idx[j] >= 0 (the shared-index transport: one index set).
template <class V>
void scatter_set(float* out, const int32_t* idx, const V* val, long k) {
  Kokkos::parallel_for("topk_scatter_set", range(0, k), KOKKOS_LAMBDA(long j) {
    if (idx[j] >= 0) out[idx[j]] = float(val[j]);
  });
}

}  // namespace gt::compress
