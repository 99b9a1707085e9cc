#pragma once
// The two seams through which a stage model's parameters and gradients may live elsewhere than in the flat
// buffers it is bound to. ZeRO (src/train/dp/) implements them: stage 3 keeps only a shard of the parameters and
// gathers a unit just before it is read (ParamSource); stages 2 and 3 with staged gradients give each unit a
// buffer of its own while its backward runs (GradSink). The model asks per unit (units.hpp: an ordinary unit, or a
// row chunk of the tied wte); the unit's buffer holds its ranges packed (UnitSpan::packed), so the model finds
// each of its tensors in it. Completion of a unit's gradients is reported by StageModel::backward's on_unit, which
// every data-parallel path needs (the buckets too), so it is not repeated here.
#include <cstddef>

namespace gt {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // The model is about to read units a and b (b = -1: one unit; the head of a one-stage model reads its own and
  // the embedding's wte). When this returns, params(a) and params(b) are readable until the next use().
  virtual void use(int a, int b) = 0;
  // Unit u's parameters (the working type), packed; only for a unit of the last use().
  virtual const void* params(int u) = 0;
};

class GradSink {
 public:
  virtual ~GradSink() = default;
  // Where unit u's fp32 gradients go, packed: zeroed before the unit's first write of the step, accumulated into.
  // Throws if unit u may not be written now (its buffer is not staged).
  virtual float* grads(int u) = 0;
};

// What StageModel::set_unit_io is given: null source or sink for the bound buffers; wte_chunk_rows > 0 cuts the
// tied wte into row chunks of that many rows (units.hpp).
struct UnitIO {
  ParamSource* params = nullptr;
  GradSink* grads = nullptr;
  size_t wte_chunk_rows = 0;
};

}  // namespace gt
