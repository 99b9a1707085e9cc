#include "src/comm/half_sum.hpp"

#include <cstdint>

#include "kernels/half.hpp"

namespace gt {

namespace {
template <class H>
void sum_into(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = H(float(a[i]) + float(b[i]));  // exact widening, one rounding
}
}  // namespace

MPI_Op half_sum_op(bool bf16) {
  static_assert(sizeof(bf16_t) == 2 && sizeof(fp16_t) == 2, "16-bit storage types");
  static MPI_Op ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op& op = ops[bf16 ? 1 : 0];
  if (op == MPI_OP_NULL) MPI_Op_create(bf16 ? &sum_into<bf16_t> : &sum_into<fp16_t>, /*commute=*/1, &op);
  return op;
}

}  // namespace gt
