#pragma once
// Gradients on a 16-bit wire (compress.method = bf16 | fp16, parallel.grad_reduce_dtype = bf16): each DP bucket
// is rounded to bf16/fp16 into a staging buffer, all-reduced in that type (src/comm/half_sum.hpp: every
// addition in float, rounded once), and widened back into the fp32 gradient buffer. Device memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/comm/comm.hpp"
#include "src/core/enums.hpp"

namespace gt {

// The wire type the config asks for: F32 (none), BF16 or F16.
DType grad_wire_dtype(CompressMethod compress_method, GradWire grad_reduce_dtype);

// wire[i] = round(g[i]) to `t` (BF16 or F16), i < n; fenced (a communicator reads it next).
void to_wire(const float* g, uint16_t* wire, size_t n, DType t);
// g[i] = float(wire[i]) (exact).
void from_wire(const uint16_t* wire, float* g, size_t n, DType t);

}  // namespace gt
