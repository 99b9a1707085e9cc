#include "src/model/units.hpp"

namespace gt {

std::vector<size_t> wte_chunk_starts(const TensorLayout& layout, size_t chunk_rows) {
  const TensorSpec& wte = layout.spec("wte");
  const size_t rows = size_t(wte.local_shape().front());
  std::vector<size_t> starts;
  for (size_t r = 0; r < rows; r += chunk_rows) starts.push_back(r);
  starts.push_back(rows);
  return starts;
}

namespace {
// wte's rows as row-chunk units, one range each.
void add_row_chunks(std::map<int, UnitSpan>& units, const TensorLayout& layout, size_t k, size_t chunk_rows) {
  const TensorSpec& t = layout.tensors()[k];
  const std::vector<size_t> starts = wte_chunk_starts(layout, chunk_rows);
  const size_t cols = size_t(t.local_shape().back());
  for (size_t c = 0; c + 1 < starts.size(); ++c) {
    UnitSpan& u = units[row_chunk_unit(int(c))];
    u.ranges.push_back({t.offset + starts[c] * cols, t.offset + starts[c + 1] * cols});
    u.elems = u.ranges.back().size();
    u.row_of = int(k);
    u.row_begin = starts[c];
    u.row_end = starts[c + 1];
  }
}
}  // namespace

std::map<int, UnitSpan> unit_spans(const TensorLayout& layout, size_t chunk_rows) {
  std::map<int, UnitSpan> units;
  const std::vector<TensorSpec>& t = layout.tensors();
  const bool chunked = chunk_rows > 0 && layout.has("wte");
  for (size_t k = 0; k < t.size(); ++k) {
    if (chunked && t[k].name == "wte") {
      add_row_chunks(units, layout, k, chunk_rows);
      continue;
    }
    UnitSpan& u = units[t[k].unit];
    // Tensors of one unit that follow each other in storage share a range (with the alignment gap between
    // them, which is zero everywhere).
    if (!u.tensors.empty() && u.tensors.back() == k - 1) {
      u.ranges.back().end = t[k].offset + t[k].size;
    } else {
      u.ranges.push_back({t[k].offset, t[k].offset + t[k].size});
    }
    u.tensors.push_back(k);
  }
  for (auto& [id, u] : units) {  // where each tensor lands when the ranges are packed one after the other
    if (u.row_of >= 0) continue;  // a row chunk: elems set above
    size_t base = 0, k = 0;
    for (const Range& r : u.ranges) {
      for (; k < u.tensors.size() && t[u.tensors[k]].offset < r.end; ++k)
        u.packed.push_back(base + t[u.tensors[k]].offset - r.begin);
      base += r.size();
    }
    u.elems = base;
  }
  return units;
}

}  // namespace gt
