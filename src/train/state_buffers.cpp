#include "src/train/state_buffers.hpp"

#include "src/core/error.hpp"

namespace gt {

namespace {
// The names on disk are those checkpoints have always used: "params" holds the fp32 master (the working copy
// itself in an fp32 run without sparsity, which has no separate master: TrainState::master_id), so old
// checkpoints load and the restart/reshard tests keep comparing bits.
const std::vector<BufferInfo> kTable = {
    {Buffer::Params, "params", nullptr, LedgerPart::Params, DTypeRule::Working},
    {Buffer::Master, "master", "params", LedgerPart::Params, DTypeRule::F32},
    {Buffer::Grads, "grads", nullptr, LedgerPart::Grads, DTypeRule::F32},
    {Buffer::GradsShard, "grads_shard", nullptr, LedgerPart::Grads, DTypeRule::F32},
    {Buffer::GradsTied, "grads_tied", nullptr, LedgerPart::Grads, DTypeRule::F32},
    {Buffer::GradsStage0, "grads_stage0", nullptr, LedgerPart::Grads, DTypeRule::F32},
    {Buffer::GradsStage1, "grads_stage1", nullptr, LedgerPart::Grads, DTypeRule::F32},
    {Buffer::Gather0, "gather0", nullptr, LedgerPart::Params, DTypeRule::Working},
    {Buffer::Gather1, "gather1", nullptr, LedgerPart::Params, DTypeRule::Working},
    {Buffer::AdamM, "adam_m", "adam_m", LedgerPart::Optimizer, DTypeRule::F32},
    {Buffer::AdamV, "adam_v", "adam_v", LedgerPart::Optimizer, DTypeRule::F32},
    {Buffer::SparseMask, "sparse_mask", "sparse_mask", LedgerPart::None, DTypeRule::F32},
    {Buffer::EfResidual, "ef_residual", "ef_residual", LedgerPart::None, DTypeRule::F32},
    {Buffer::GradWire, "grad_wire", nullptr, LedgerPart::None, DTypeRule::Wire},
    {Buffer::GradWireShard, "grad_wire_shard", nullptr, LedgerPart::None, DTypeRule::Wire},
    {Buffer::GradWireTied, "grad_wire_tied", nullptr, LedgerPart::None, DTypeRule::Wire},
    {Buffer::GradWireStage0, "grad_wire_stage0", nullptr, LedgerPart::None, DTypeRule::Wire},
    {Buffer::GradWireStage1, "grad_wire_stage1", nullptr, LedgerPart::None, DTypeRule::Wire},
};
}  // namespace

const std::vector<BufferInfo>& buffer_table() { return kTable; }

const BufferInfo& buffer_info(Buffer id) {
  const size_t i = static_cast<size_t>(id);
  if (i >= kTable.size() || kTable[i].id != id) throw Error("train state: buffer id " + std::to_string(i) + " is not in the table");
  return kTable[i];
}

const char* buffer_name(Buffer id) { return buffer_info(id).name; }

std::string disk_name(Buffer id) {
  const BufferInfo& b = buffer_info(id);
  if (!b.disk) throw Error(std::string("train state: buffer '") + b.name + "' is not saved in checkpoints");
  return b.disk;
}

std::string disk_path(Buffer id, const std::string& tensor) { return disk_name(id) + "/" + tensor; }

std::optional<Buffer> buffer_on_disk(const std::string& disk) {
  for (const BufferInfo& b : kTable)
    if (b.disk && disk == b.disk) return b.id;
  return std::nullopt;
}

bool dtype_allowed(Buffer id, DType dtype, Precision working) {
  switch (buffer_info(id).dtype) {
    case DTypeRule::Working: return dtype == working_dtype(working);
    case DTypeRule::F32: return dtype == DType::F32;
    case DTypeRule::Wire: return dtype == DType::BF16 || dtype == DType::F16;
  }
  return false;
}

}  // namespace gt
