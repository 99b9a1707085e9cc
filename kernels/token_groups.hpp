#pragma once
// The positions of a micro-batch's tokens grouped by token id: the shape of the token-embedding gradient on the
// device split (kernels/embedding.hpp), where one team per distinct token adds that token's dout rows in position
// order instead of one thread per column walking all B*T tokens. Built on the host, where the tokens come from,
// once per micro-batch (the model does it in set_tokens), and copied to the device with them: no sort on the
// device, no atomics, so the sums are the same bits on every run (the host split's order, in fact).
// No Kokkos here: plain host code.
#include <cstdint>
#include <utility>
#include <vector>

namespace gt {

// Device (or host) pointers into one packed int32 array of token_groups_elems(BT) elements:
//   pos   (BT)     positions 0..BT-1 ordered by token, ascending within each token
//   start (n + 1)  group g is pos[start[g] .. start[g+1])
//   token (n)      the token id of group g (distinct, ascending as unsigned)
struct TokenGroups {
  const int32_t* pos = nullptr;
  const int32_t* start = nullptr;
  const int32_t* token = nullptr;
  int n = -1;  // number of groups; -1: none prepared
};

// Upper bound of the packed array's length for BT tokens (n <= BT groups).
inline long token_groups_elems(long BT) { return 3 * BT + 1; }

// The pointers into a packed array (host or device) of BT tokens in n groups.
inline TokenGroups token_groups_at(const int32_t* packed, long BT, int n) {
  return TokenGroups{packed, packed + BT, packed + BT + n + 1, n};
}

// Groups tokens[0..BT) into `packed` (resized to BT + 2n + 1); returns n. A stable LSD radix sort of the
// positions by token, 8 bits a pass (a pass whose digit is the same for every token is skipped: two passes for
// vocabularies below 2^16): O(BT) per pass, tens of microseconds for BT = 4096.
inline int group_tokens(const int32_t* tokens, long BT, std::vector<int32_t>& packed) {
  std::vector<int32_t> a(static_cast<size_t>(BT)), b(static_cast<size_t>(BT));
  for (long i = 0; i < BT; ++i) a[size_t(i)] = int32_t(i);
  for (int shift = 0; shift < 32; shift += 8) {
    long count[257] = {};
    auto digit = [&](int32_t p) { return (uint32_t(tokens[p]) >> shift) & 0xffu; };
    for (long i = 0; i < BT; ++i) ++count[digit(a[size_t(i)]) + 1];
    bool one_digit = false;
    for (int d = 1; d <= 256; ++d) one_digit = one_digit || count[d] == BT;
    if (one_digit) continue;
    for (int d = 1; d <= 256; ++d) count[d] += count[d - 1];  // count[d]: first slot of digit d
    for (long i = 0; i < BT; ++i) b[size_t(count[digit(a[size_t(i)])]++)] = a[size_t(i)];
    std::swap(a, b);
  }
  std::vector<int32_t> start, token;
  for (long i = 0; i < BT; ++i) {
    const int32_t t = tokens[a[size_t(i)]];
    if (i == 0 || t != token.back()) {
      start.push_back(int32_t(i));
      token.push_back(t);
    }
  }
  start.push_back(int32_t(BT));
  packed = std::move(a);
  packed.insert(packed.end(), start.begin(), start.end());
  packed.insert(packed.end(), token.begin(), token.end());
  return static_cast<int>(token.size());
}

}  // namespace gt
