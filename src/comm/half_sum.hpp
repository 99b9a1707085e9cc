#pragma once
// The MPI sum of 16-bit floats (DType::BF16, DType::F16): MPI has no bfloat16/binary16 types, so they travel
// as MPI_UINT16_T with a user-defined commutative op that widens both operands to float, adds, and rounds the
// sum once back to 16 bits (round to nearest even, kernels/half.hpp). A reduction over P ranks applies it P - 1
// times, so each element is rounded P - 1 times (NCCL sums its own 16-bit types: comm_nccl.cpp). Kept apart
// from comm_mpi.cpp because the conversions are Kokkos inline functions and the grid's sources stay out of
// Kokkos' compile flags.
#include <mpi.h>

namespace gt {

// The op for 16-bit sums: bf16 or (false) IEEE binary16. Created on first use after MPI_Init and kept for the
// life of the process (an MPI_Op is a process-wide handle; MPI_Finalize releases it), so every communicator and
// every call share one.
MPI_Op half_sum_op(bool bf16);

}  // namespace gt
