// The one table of TrainState's buffers (src/train/state_buffers.hpp, issue 20): each id has one row, in enum
// order; the names on disk are unique and map back to their id; the element-type rules say what they say.
// The disk names are compared against the literal names checkpoints have always used (the file format, written
// here independently of the table), so renaming one in the table fails here before old checkpoints stop loading.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "src/core/error.hpp"
#include "src/train/state_buffers.hpp"

namespace {

TEST(StateBuffers, OneRowPerIdInEnumOrder) {
  const auto& table = gt::buffer_table();
  ASSERT_FALSE(table.empty());
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].id), i) << table[i].name;
    EXPECT_EQ(&gt::buffer_info(table[i].id), &table[i]);
    EXPECT_TRUE(names.insert(table[i].name).second) << "buffer name '" << table[i].name << "' twice";
  }
}

TEST(StateBuffers, DiskNamesAreUniqueAndRoundTrip) {
  std::set<std::string> disk;
  for (const gt::BufferInfo& b : gt::buffer_table()) {
    if (!b.disk) {
      EXPECT_THROW(gt::disk_name(b.id), gt::Error) << b.name;
      continue;
    }
    EXPECT_TRUE(disk.insert(b.disk).second) << "disk name '" << b.disk << "' twice";
    const std::optional<gt::Buffer> back = gt::buffer_on_disk(gt::disk_name(b.id));  // id -> name -> id
    ASSERT_TRUE(back.has_value()) << b.name;
    EXPECT_EQ(*back, b.id) << b.name;
    EXPECT_EQ(gt::disk_name(*back), b.disk);  // -> name again
  }
  EXPECT_FALSE(gt::buffer_on_disk("grads").has_value());  // a buffer that is never saved has no disk name
  EXPECT_FALSE(gt::buffer_on_disk("no_such_group").has_value());
}

TEST(StateBuffers, DiskNamesAreTheCheckpointFormat) {
  // What checkpoints hold (docs/checkpoints.md): the fp32 master under "params/", the moments, the 2:4 masks and
  // the top-k residual dataset. Nothing else is saved.
  const std::map<gt::Buffer, std::string> format = {{gt::Buffer::Master, "params"},
                                                    {gt::Buffer::AdamM, "adam_m"},
                                                    {gt::Buffer::AdamV, "adam_v"},
                                                    {gt::Buffer::SparseMask, "sparse_mask"},
                                                    {gt::Buffer::EfResidual, "ef_residual"}};
  for (const gt::BufferInfo& b : gt::buffer_table()) {
    const auto it = format.find(b.id);
    if (it == format.end()) EXPECT_EQ(b.disk, nullptr) << b.name;
    else EXPECT_EQ(gt::disk_name(b.id), it->second) << b.name;
  }
  EXPECT_EQ(gt::disk_path(gt::Buffer::AdamM, "h.0.attn.qkv.w"), "adam_m/h.0.attn.qkv.w");
}

TEST(StateBuffers, TypeRules) {
  using gt::Buffer;
  using gt::DType;
  using gt::Precision;
  EXPECT_TRUE(gt::dtype_allowed(Buffer::Params, DType::BF16, Precision::BF16));
  EXPECT_FALSE(gt::dtype_allowed(Buffer::Params, DType::F32, Precision::BF16));
  EXPECT_TRUE(gt::dtype_allowed(Buffer::Gather0, DType::F16, Precision::FP16));
  EXPECT_TRUE(gt::dtype_allowed(Buffer::Params, DType::F32, Precision::FP32));
  EXPECT_TRUE(gt::dtype_allowed(Buffer::Master, DType::F32, Precision::BF16));
  EXPECT_FALSE(gt::dtype_allowed(Buffer::AdamM, DType::BF16, Precision::BF16));
  EXPECT_TRUE(gt::dtype_allowed(Buffer::GradWireShard, DType::BF16, Precision::FP32));
  EXPECT_FALSE(gt::dtype_allowed(Buffer::GradWire, DType::F32, Precision::FP32));  // a wire copy is 16-bit
}

TEST(StateBuffers, LedgerPartsOfTheModelState) {
  // The ledger counts the ZeRO paper's model state (zero.hpp): working copy, master and gather buffers as
  // parameters, every fp32 gradient buffer as gradients, the moments as optimizer state.
  using gt::Buffer;
  using gt::LedgerPart;
  for (Buffer b : {Buffer::Params, Buffer::Master, Buffer::Gather0, Buffer::Gather1})
    EXPECT_EQ(gt::buffer_info(b).ledger, LedgerPart::Params) << gt::buffer_name(b);
  for (Buffer b : {Buffer::Grads, Buffer::GradsShard, Buffer::GradsTied, Buffer::GradsStage0, Buffer::GradsStage1})
    EXPECT_EQ(gt::buffer_info(b).ledger, LedgerPart::Grads) << gt::buffer_name(b);
  for (Buffer b : {Buffer::AdamM, Buffer::AdamV}) EXPECT_EQ(gt::buffer_info(b).ledger, LedgerPart::Optimizer);
}

}  // namespace
