#pragma once
// A stage's units (TensorSpec::unit: 0 embedding, 1..L blocks, L+1 head) as ranges of its flat layout. A unit is
// what ZeRO gathers (its parameters) and stages (its gradients) as one piece, and what the model asks for through
// ParamSource and GradSink (unit_io.hpp): the unit's ranges packed one after the other into one buffer, tensor k of
// the unit at packed[k] elements from its start.
//
// A second kind of unit is a row chunk: rows [row_begin, row_end) of one tensor, no whole tensor. The tied wte of a
// one-stage model is cut so when its gradients are staged (src/train/dp/zero_grads.hpp), so that no buffer holds
// all of wte or its gradient: with chunk_rows > 0 wte leaves the embedding unit and becomes units of chunk_rows rows
// each (the last one shorter), ids row_chunk_unit(0), (1), ... for its rows from 0 up.
#include <cstddef>
#include <map>
#include <vector>

#include "src/model/tensor_layout.hpp"

namespace gt {

// The unit id of row chunk c: -2, -3, ...; -1 stays "no unit".
inline int row_chunk_unit(int c) { return -c - 2; }

struct UnitSpan {
  std::vector<Range> ranges;    // of the layout, ascending
  std::vector<size_t> tensors;  // indices into layout.tensors() (none for a row chunk)
  std::vector<size_t> packed;   // per entry of tensors
  size_t elems = 0;             // of all ranges
  // A row chunk: the tensor (index) whose rows it holds, and which rows (local); row_of -1: an ordinary unit.
  int row_of = -1;
  size_t row_begin = 0, row_end = 0;
};

// The units of a layout; chunk_rows > 0 cuts the tied wte (if the layout has one) into row chunks.
std::map<int, UnitSpan> unit_spans(const TensorLayout& layout, size_t chunk_rows = 0);
// The row starts of wte's chunks of chunk_rows rows: chunk c holds local rows [starts[c], starts[c+1]).
std::vector<size_t> wte_chunk_starts(const TensorLayout& layout, size_t chunk_rows);

}  // namespace gt
