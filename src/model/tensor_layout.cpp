#include "src/model/tensor_layout.hpp"

#include <algorithm>

#include "src/core/error.hpp"
#include "src/model/init.hpp"

namespace gt {

std::vector<int64_t> TensorSpec::local_shape() const {
  std::vector<int64_t> s = global_shape;
  if (split_dim >= 0) s[split_dim] = split_len;
  if (sel_dim >= 0) s[sel_dim] = sel_len + tail_len;
  return s;
}

std::vector<int64_t> TensorSpec::local_start() const {
  std::vector<int64_t> s(global_shape.size(), 0);
  if (split_dim >= 0) s[split_dim] = split_start;
  if (sel_dim >= 0) s[sel_dim] = sel_start;  // of the first piece only (a two-piece slice is no hyperslab)
  return s;
}

int64_t TensorSpec::global_size() const {
  int64_t n = 1;
  for (int64_t d : global_shape) n *= d;
  return n;
}

int64_t TensorSpec::global_index(int64_t i) const {
  if (split_dim < 0 && sel_dim < 0) return i;
  // Decompose the local index over the local shape, shift the split dimension, recompose globally.
  const std::vector<int64_t> ls = local_shape();
  int64_t g = 0, stride = 1;
  for (int d = static_cast<int>(ls.size()) - 1; d >= 0; --d) {
    int64_t coord = i % ls[d];
    i /= ls[d];
    if (d == split_dim) coord += split_start;
    if (d == sel_dim) coord = coord < sel_len ? sel_start + coord : tail_start + (coord - sel_len);
    g += coord * stride;
    stride *= global_shape[d];
  }
  return g;
}

int64_t TensorSpec::tail_begin() const {
  // The tail rows are the last tail_len along sel_dim and every dimension before sel_dim is one slice locally (the
  // key/value group's), so the tail is one contiguous range at the end of the tensor.
  const std::vector<int64_t> ls = local_shape();
  int64_t inner = 1;
  for (size_t d = 0; d < ls.size(); ++d) {
    if (int(d) < sel_dim && ls[d] != 1) throw Error("tensor " + name + ": a replicated tail needs one outer slice");
    if (int(d) > sel_dim) inner *= ls[d];
  }
  return sel_len * inner;
}

TensorLayout::TensorLayout(std::vector<TensorSpec> tensors, int dp_size) : dp_size_(dp_size) {
  if (dp_size < 1) throw Error("tensor layout: DP size " + std::to_string(dp_size) + " < 1");
  index_.reserve(tensors.size());
  for (TensorSpec& s : tensors) {
    if (!index_.emplace(s.name, specs_.size()).second) throw Error("tensor layout: duplicate tensor '" + s.name + "'");
    if (s.split_dim < 0) s.split_len = 0;
    int64_t n = 1;
    for (int64_t d : s.local_shape()) n *= d;
    s.size = static_cast<size_t>(n);
    s.offset = used_;
    used_ += s.size;
    specs_.push_back(std::move(s));
  }
  const size_t quantum = size_t(dp_size) * kAlign;
  padded_ = (used_ + quantum - 1) / quantum * quantum;
}

TensorLayout TensorLayout::slice(size_t first, size_t count) const {
  if (first + count > specs_.size()) throw Error("tensor layout: slice beyond the last tensor");
  TensorLayout out = *this;
  out.specs_.assign(specs_.begin() + long(first), specs_.begin() + long(first + count));
  out.index_.clear();  // names -> positions in the slice
  for (size_t k = 0; k < out.specs_.size(); ++k) out.index_[out.specs_[k].name] = k;
  return out;
}

const TensorSpec& TensorLayout::spec(const std::string& name) const {
  const auto i = index_.find(name);
  if (i == index_.end()) throw Error("tensor layout: no tensor '" + name + "'");
  return specs_[i->second];
}

bool TensorLayout::has(const std::string& name) const { return index_.count(name) > 0; }

Range TensorLayout::shard_range(int dp_rank) const {
  const size_t shard = padded_ / size_t(dp_size_);
  return Range{size_t(dp_rank) * shard, size_t(dp_rank + 1) * shard};
}

template <class T>
void initial_params(const TensorLayout& layout, uint64_t seed, T* p, Range r) {
  std::fill(p, p + r.size(), T(0));  // the padding, and any gap between tensors
  for (const auto& s : layout.tensors()) {
    const size_t b = std::max(s.offset, r.begin), e = std::min(s.offset + s.size, r.end);
    if (b >= e) continue;
    const uint64_t name_hash = fnv1a64(s.name);
    for (size_t i = b - s.offset; i < e - s.offset; ++i) {
      T& q = p[s.offset + i - r.begin];
      switch (s.init) {
        case Init::Zeros: q = T(0); break;
        case Init::Ones: q = T(1); break;
        case Init::Normal:
          q = static_cast<T>(s.std * normal_at(seed, name_hash, static_cast<uint64_t>(s.global_index(i))));
          break;
        case Init::Uniform:
          q = static_cast<T>(s.std * (2.0 * uniform_at(seed, name_hash, static_cast<uint64_t>(s.global_index(i))) - 1.0));
          break;
      }
    }
  }
}

template <class T>
void initial_params(const TensorLayout& layout, uint64_t seed, T* p) {
  initial_params(layout, seed, p, Range{0, layout.size()});
}

template void initial_params<float>(const TensorLayout&, uint64_t, float*);
template void initial_params<double>(const TensorLayout&, uint64_t, double*);
template void initial_params<float>(const TensorLayout&, uint64_t, float*, Range);
template void initial_params<double>(const TensorLayout&, uint64_t, double*, Range);

}  // namespace gt
