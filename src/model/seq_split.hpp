#pragma once
// Sequence parallelism (Korthikanti et al. 2022, Megatron-LM): under tensor parallelism the activations outside the
// TP regions (the norms, the residual adds, the residual stream between blocks and stages) are split over the tp
// ranks along the token rows. A micro-batch's B*T token rows, in (b, t) order, are cut into tp contiguous blocks of
// B*T/tp rows; rank r holds block r. With B = 1 that is exactly the sequence split; with B > 1 each rank holds a
// contiguous 1/tp of the micro-batch's tokens, the same memory and traffic as Megatron's split of its (s, b) rows.
// Every operation on these activations works row by row, so the cut changes no arithmetic.
//
// The column-parallel GEMMs need every row: all-gather before them (backward: their input gradient, partial per
// rank, is reduce-scattered instead of all-reduced). The row-parallel GEMMs give partial sums of every row:
// reduce-scatter after them (backward: the output gradient is all-gathered first). Gradients of the replicated
// parameters that act on the split rows (the norm gains, GPT-2's norm and row-parallel biases) are then partial per
// rank and are summed over tp.
//
// This class holds only the collectives; GPT<T> decides where they go. 16-bit rows are reduced in fp32 (widened,
// reduce-scattered, rounded once), as the plain TP all-reduce does.
#include <cstddef>
#include <string>

#include "kernels/elementwise.hpp"
#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"
#include "src/comm/comm.hpp"
#include "src/core/error.hpp"

namespace gt {

// Throws gt::Error (one line) when the token rows cannot be split over tp: seq_len not divisible by tp.
inline void check_sequence_split(int seq_len, int tp) {
  if (tp > 1 && seq_len % tp != 0)
    throw Error("parallel.sequence_parallel: model.seq_len (" + std::to_string(seq_len) +
                ") is not divisible by parallel.tp (" + std::to_string(tp) + ")");
}

template <class T>
class SeqSplit {
 public:
  using A = acc_t<T>;
  SeqSplit() = default;
  // rows: B*T of one micro-batch; width: the widest row (C) reduced. on = false (or size 1): gather is the identity
  // and local_rows() = rows, so the model has one code path for both.
  SeqSplit(bool on, int rank, int size, Comm* comm, long rows, long width)
      : on_(on && size > 1), rank_(rank), size_(size), comm_(comm), rows_(rows) {
    local_ = on_ ? rows / size : rows;
    if (on_ && is_half_v<T>) stage_ = DeviceView<float>("sp_stage", (rows + local_) * width);
  }
  bool on() const { return on_; }
  long rows() const { return rows_; }
  long local_rows() const { return local_; }  // rows this rank holds outside the TP regions
  long first_row() const { return on_ ? rank_ * local_ : 0; }
  size_t staging_bytes() const { return stage_.size() * sizeof(float); }

  // full (rows x width) = every rank's local (local_rows x width) in rank order; returns full. May be in place
  // (local == full + first_row() * width). Off: returns local untouched.
  const T* gather(T* full, const T* local, long width) const {
    if (!on_) return local;
    comm_->allgather(local, full, size_t(local_ * width), dtype());
    return full;
  }
  // On only: this rank's block of the sum over ranks of full (rows x width, partial per rank) into local (distinct
  // from full), returned. (Off, GPT<T> all-reduces in place instead.)
  T* reduce(T* full, T* local, long width) {
    const size_t n = size_t(rows_ * width);
    const size_t m = size_t(local_ * width);
    if constexpr (is_half_v<T>) {
      convert(stage_.data(), full, long(n));
      comm_->reduce_scatter(stage_.data(), stage_.data() + n, m, DType::F32, ReduceOp::Sum);
      convert(local, stage_.data() + n, long(m));
    } else {
      comm_->reduce_scatter(full, local, m, dtype_of<T>(), ReduceOp::Sum);
    }
    return local;
  }

 private:
  static DType dtype() {
    if constexpr (std::is_same_v<T, bf16_t>) return DType::BF16;
    else if constexpr (std::is_same_v<T, fp16_t>) return DType::F16;
    else return dtype_of<T>();
  }
  bool on_ = false;
  int rank_ = 0, size_ = 1;
  Comm* comm_ = nullptr;
  long rows_ = 0, local_ = 0;
  DeviceView<float> stage_;  // 16-bit T: the widened full rows and this rank's reduced block
};

}  // namespace gt
