#include "src/train/dp/half_wire.hpp"

#include <string>

#include "kernels/half.hpp"
#include "src/core/error.hpp"

namespace gt {

DType grad_wire_dtype(CompressMethod method, GradWire reduce_dtype) {
  if (method == CompressMethod::FP16) return DType::F16;
  if (method == CompressMethod::BF16 || reduce_dtype == GradWire::BF16) return DType::BF16;
  return DType::F32;
}

namespace {
template <class H>
void to_wire_as(const float* g, uint16_t* wire, size_t n) {
  H* w = reinterpret_cast<H*>(wire);  // H is a 16-bit struct of the same bits (kernels/half.hpp)
  Kokkos::parallel_for("to_wire", range(0, long(n)), KOKKOS_LAMBDA(long i) { w[i] = H(g[i]); });
  Kokkos::fence();  // the communicator reads it next
}
template <class H>
void from_wire_as(const uint16_t* wire, float* g, size_t n) {
  const H* w = reinterpret_cast<const H*>(wire);
  Kokkos::parallel_for("from_wire", range(0, long(n)), KOKKOS_LAMBDA(long i) { g[i] = float(w[i]); });
  Kokkos::fence();
}
}  // namespace

void to_wire(const float* g, uint16_t* wire, size_t n, DType t) {
  if (t == DType::BF16) to_wire_as<bf16_t>(g, wire, n);
  else to_wire_as<fp16_t>(g, wire, n);
}

void from_wire(const uint16_t* wire, float* g, size_t n, DType t) {
  if (t == DType::BF16) from_wire_as<bf16_t>(wire, g, n);
  else from_wire_as<fp16_t>(wire, g, n);
}

}  // namespace gt
