#include "src/train/stage_chunks.hpp"

#include <algorithm>

#include "src/core/error.hpp"

namespace gt {

std::vector<StageLayout> stage_chunks(const Config& cfg, int pp, int stage, const std::vector<int>& partition) {
  cfg.check_interleaving(pp);
  const int v = cfg.pipeline_chunks();
  if (v == 1) return {StageLayout{stage, pp, partition[size_t(stage)], partition[size_t(stage) + 1]}};
  const int per = cfg.model.n_layer / (pp * v);  // check_interleaving: divisible
  std::vector<StageLayout> out;
  for (int c = 0; c < v; ++c) {
    const int j = c * pp + stage;
    out.push_back(StageLayout{j, pp * v, j * per, (j + 1) * per});
  }
  return out;
}

std::vector<TensorSpec> stage_tensor_specs(const ModelConfig& m, const std::vector<StageLayout>& chunks, int tp_rank,
                                           int tp_size) {
  std::vector<TensorSpec> out;
  for (const StageLayout& c : chunks) {
    std::vector<TensorSpec> s = model_tensor_specs(m, c, tp_rank, tp_size);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

int chunk_slots(const std::vector<PipeOp>& ops, int chunk) {
  std::vector<PipeOp> mine;
  for (const PipeOp& op : ops)
    if (op.chunk == chunk) mine.push_back(op);
  return std::max(1, max_in_flight(mine));
}

namespace {

std::unique_ptr<StageModel> make_gpt(Precision p, const ModelConfig& m, uint64_t seed, int micro_batch_size,
                                     StageLayout stage, TensorParallel tp, int slots, const TensorLayout* layout,
                                     Recompute rc) {
  if (p == Precision::BF16) return std::make_unique<GPT<bf16_t>>(m, seed, micro_batch_size, stage, tp, slots, layout, rc);
  if (p == Precision::FP16) return std::make_unique<GPT<fp16_t>>(m, seed, micro_batch_size, stage, tp, slots, layout, rc);
  return std::make_unique<GPT<float>>(m, seed, micro_batch_size, stage, tp, slots, layout, rc);
}

}  // namespace

std::unique_ptr<StageModel> make_stage_model(Precision p, const ModelConfig& m, uint64_t seed, int micro_batch_size,
                                             const std::vector<StageLayout>& chunks, TensorParallel tp,
                                             const std::vector<PipeOp>& ops, const TensorLayout& layout, Recompute rc) {
  if (chunks.size() == 1) return make_gpt(p, m, seed, micro_batch_size, chunks[0], tp, chunk_slots(ops, 0), &layout, rc);
  std::vector<std::unique_ptr<StageModel>> models;
  std::vector<size_t> first{0};
  for (size_t c = 0; c < chunks.size(); ++c) {
    const size_t n = model_tensor_specs(m, chunks[c], tp.rank, tp.size).size();
    first.push_back(first.back() + n);
    const TensorLayout slice = layout.slice(first[c], n);  // GPT keeps its own copy of the layout
    models.push_back(make_gpt(p, m, seed, micro_batch_size, chunks[c], tp, chunk_slots(ops, int(c)), &slice, rc));
  }
  const int pp = chunks[0].stages / int(chunks.size());
  const StageLayout stage{chunks[0].stage, pp, chunks.front().block_begin, chunks.back().block_end};
  return std::make_unique<ChunkedStage>(std::move(models), std::move(first), stage);
}

ChunkedStage::ChunkedStage(std::vector<std::unique_ptr<StageModel>> chunks, std::vector<size_t> first_tensor,
                           StageLayout stage)
    : chunks_(std::move(chunks)), first_(std::move(first_tensor)), stage_(stage) {
  if (chunks_.empty() || first_.size() != chunks_.size() + 1)
    throw Error("pipeline: internal: a chunked stage needs each chunk's first tensor");
}

void* ChunkedStage::whole() const {
  throw Error("pipeline: internal: a stage of several model chunks computes through chunk(c)");
}

int ChunkedStage::slots() const {
  int n = 0;
  for (const auto& c : chunks_) n += c->slots();
  return n;
}

void ChunkedStage::bind(void* params, void* grads) {
  for (auto& c : chunks_) c->bind(params, grads);  // each chunk's slice holds offsets into the same buffers
}

void ChunkedStage::set_unit_timer(std::function<void(int, bool)> timer) {
  for (auto& c : chunks_) c->set_unit_timer(timer);
}

void ChunkedStage::set_unit_io(const UnitIO& io) {
  if (io.wte_chunk_rows > 0)
    throw Error("pipeline: wte in chunks of rows (staged ZeRO gradients) needs a one-stage model, not interleaved chunks");
  for (auto& c : chunks_) c->set_unit_io(io);
}

size_t ChunkedStage::activation_bytes_per_slot() const {
  size_t n = 0;
  for (const auto& c : chunks_) n += c->activation_bytes_per_slot();
  return n;
}

size_t ChunkedStage::kept_activation_bytes() const {
  size_t n = 0;
  for (const auto& c : chunks_) n += c->kept_activation_bytes();
  return n;
}

size_t ChunkedStage::work_bytes() const {
  size_t n = 0;  // each chunk has its own work buffers (gradients of activations, and the head's on the last)
  for (const auto& c : chunks_) n += c->work_bytes();
  return n;
}

double ChunkedStage::take_loss_sum() {
  double s = 0;
  for (auto& c : chunks_) s += c->take_loss_sum();  // 0 but on the chunk that holds the head
  return s;
}

}  // namespace gt
