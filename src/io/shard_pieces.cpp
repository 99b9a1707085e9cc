#include "src/io/shard_pieces.hpp"

#include "src/io/checksum.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t shard_elements(const TensorShard& t) {
  return t.flat_end < 0 ? num_elements(t.count) : t.flat_end - t.flat_begin;
}

namespace {

// Appends the boxes of elements [a, b) of the sub-box of dimensions d.. of `t` whose dimensions before d are
// fixed at `at` (one index each), row-major.
void split(const TensorShard& t, size_t d, std::vector<int64_t>& at, int64_t a, int64_t b, std::vector<Box>& out) {
  if (a >= b) return;
  const size_t nd = t.count.size();
  auto box = [&](int64_t first, int64_t len) {  // rows [first, first + len) of dimension d, all of the rest
    Box x{t.start, t.count};
    for (size_t k = 0; k < d; ++k) x.start[k] = at[k], x.count[k] = 1;
    x.start[d] = t.start[d] + first;
    x.count[d] = len;
    out.push_back(std::move(x));
  };
  if (d + 1 == nd) return box(a, b - a);
  int64_t inner = 1;  // elements per index of dimension d
  for (size_t k = d + 1; k < nd; ++k) inner *= t.count[k];
  int64_t r0 = a / inner;
  const int64_t r1 = b / inner;
  if (a % inner != 0 || r0 == r1) {  // starts mid-row (or lies inside one row): that row's part first
    at[d] = t.start[d] + r0;
    split(t, d + 1, at, a % inner, r0 == r1 ? b % inner : inner, out);
    if (r0 == r1) return;
    ++r0;
  }
  if (r1 > r0) box(r0, r1 - r0);
  if (b % inner != 0) {
    at[d] = t.start[d] + r1;
    split(t, d + 1, at, 0, b % inner, out);
  }
}

}  // namespace

std::vector<Box> shard_boxes(const TensorShard& t) {
  std::vector<Box> out;
  if (t.count.empty() || num_elements(t.count) == 0) return out;
  if (t.flat_end < 0) {
    out.push_back({t.start, t.count});
    return out;
  }
  std::vector<int64_t> at(t.count.size(), 0);
  split(t, 0, at, t.flat_begin, t.flat_end, out);
  return out;
}

uint64_t shard_checksum(const TensorShard& t) {
  uint64_t sum = 0;
  const float* p = t.data;
  for (const Box& b : shard_boxes(t)) {
    sum += hyperslab_checksum(p, t.global_shape, b.start, b.count);
    p += num_elements(b.count);
  }
  return sum;
}

void select_shard(hid_t space, const TensorShard& t, bool select) {
  const std::vector<Box> boxes = select ? shard_boxes(t) : std::vector<Box>();
  if (boxes.empty()) {
    H5Sselect_none(space);
    return;
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    std::vector<hsize_t> s(boxes[i].start.begin(), boxes[i].start.end()), c(boxes[i].count.begin(), boxes[i].count.end());
    h5check(H5Sselect_hyperslab(space, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, s.data(), nullptr, c.data(), nullptr),
            "cannot select hyperslab");
  }
}

H5Handle select_shard_transfer(hid_t space, const TensorShard* t) {
  select_shard(space, t ? *t : TensorShard{}, t != nullptr);
  const hsize_t n = t ? static_cast<hsize_t>(shard_elements(*t)) : 1;
  H5Handle mem(h5check(H5Screate_simple(1, &n, nullptr), "cannot create dataspace"));
  if (!t) H5Sselect_none(mem.get());
  return mem;
}

}  // namespace gt::io
