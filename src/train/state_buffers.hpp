#pragma once
// The one list of TrainState's buffers (issue 20, Debt 2): a typed id per buffer and ONE table giving its name
// (allocation label, error messages), its name on disk (the HDF5 group or dataset a checkpoint holds it in, or
// none), its memory-ledger part and its element-type rule. Callers choose a buffer by id; the buffer names are
// written only in state_buffers.cpp (test train_buffer_names_only_here).
#include <optional>
#include <string>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/core/enums.hpp"

namespace gt {

enum class Buffer {
  Params,          // the working parameters the model computes with (the run's working type)
  Master,          // fp32 parameters the optimizer updates, when they are not the working copy (16-bit, sparsity)
  Grads,           // the full fp32 gradient accumulation buffer
  GradsShard,      // ZeRO-2/3: this rank's shard of the DP-reduced gradients
  GradsTied,       // ZeRO staged gradients (zero_grads.hpp): the tied wte's unit
  GradsStage0,     //   the two alternating unit-sized staging buffers
  GradsStage1,
  Gather0,         // ZeRO-3: the two unit-sized buffers the parameters are gathered into (zero_gather.hpp)
  Gather1,
  AdamM,           // the AdamW moments
  AdamV,
  SparseMask,      // 2:4 sparsity's masks, fp32 0/1 (sparsity.hpp)
  EfResidual,      // top-k's error-feedback residuals (compress.method = topk)
  GradWire,        // the 16-bit wire copies of the gradients (train.grad_reduce_dtype): the full buffer,
  GradWireShard,   //   the reduced shard,
  GradWireTied,    //   and those of the staging buffers above
  GradWireStage0,
  GradWireStage1,
};

// Which part of the memory ledger (zero.hpp, StateLedger) counts a buffer. None: not counted today (the ledger
// holds the ZeRO paper's model state; the masks, residuals and wire copies are outside it).
enum class LedgerPart { Params, Grads, Optimizer, None };
// A buffer's element type: the run's working type (train.precision), fp32, or the 16-bit gradient wire type.
enum class DTypeRule { Working, F32, Wire };

struct BufferInfo {
  Buffer id;
  const char* name;
  const char* disk;  // the checkpoint's group ("<disk>/<tensor>") or dataset; nullptr: never saved
  LedgerPart ledger;
  DTypeRule dtype;
};

// Every buffer, in the order of the enum.
const std::vector<BufferInfo>& buffer_table();
const BufferInfo& buffer_info(Buffer id);
const char* buffer_name(Buffer id);
// The checkpoint's name of a saved buffer; throws gt::Error for one that is never saved.
std::string disk_name(Buffer id);
// The dataset of tensor `tensor` in a saved buffer's group: "<disk name>/<tensor>".
std::string disk_path(Buffer id, const std::string& tensor);
// The buffer a checkpoint's group or dataset name holds, if any (a name read from a file).
std::optional<Buffer> buffer_on_disk(const std::string& disk);
// The working type's DType (train.precision).
constexpr DType working_dtype(Precision p) {
  return p == Precision::BF16 ? DType::BF16 : p == Precision::FP16 ? DType::F16 : DType::F32;
}
// Whether `dtype` obeys the buffer's rule in a run of working type `working`.
bool dtype_allowed(Buffer id, DType dtype, Precision working);

}  // namespace gt
