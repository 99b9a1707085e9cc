#pragma once
// The model chunks of one pipeline stage. With parallel.schedule = interleaved and parallel.virtual_stages = v the
// n_layer blocks form p v equal layer blocks (virtual stages), and chunk c of stage s holds virtual stage c p + s
// (Megatron's round-robin): a micro-batch passes every stage v times, the last stage's chunk c feeding stage 0's
// chunk c + 1. The embedding belongs to chunk 0 of stage 0, ln_f and the tied head to chunk v - 1 of the last stage.
// Every other schedule has one chunk per stage: its contiguous range of blocks (stage_partition).
//
// The stage keeps one TrainState over all its chunks' tensors (chunk by chunk, so one flat buffer, one set of DP
// buckets, ZeRO shards and checkpoint shards as for any stage); each chunk is a GPT over its slice of that layout,
// bound to the same buffers, with its own activation slots. ChunkedStage puts them behind the StageModel interface
// for the trainer (binding, ZeRO's parameter source and gradient sink, timers, the memory ledger) and hands the pipeline
// runner one chunk per op (chunk(c)).
#include <memory>
#include <vector>

#include "src/core/config.hpp"
#include "src/model/gpt.hpp"
#include "src/train/schedule.hpp"

namespace gt {

// The virtual stages stage `stage` of `pp` holds, in chunk order. One chunk: {stage, pp, partition[stage],
// partition[stage + 1]}. Several: {c pp + stage, pp v, its equal block range}. Throws gt::Error on settings that
// do not fit pp (Config::check_interleaving).
std::vector<StageLayout> stage_chunks(const Config& cfg, int pp, int stage, const std::vector<int>& partition);

// The tensors of the stage on one TP rank: every chunk's (model_tensor_specs), in chunk order.
std::vector<TensorSpec> stage_tensor_specs(const ModelConfig& m, const std::vector<StageLayout>& chunks, int tp_rank,
                                           int tp_size);

// Micro-batches of chunk c whose activations the op list holds at once (its slots; at least 1).
int chunk_slots(const std::vector<PipeOp>& ops, int chunk);

// The stage's model in the run's storage type (train.precision) over `layout` (stage_tensor_specs of `chunks`):
// a GPT for one chunk, a ChunkedStage for several.
std::unique_ptr<StageModel> make_stage_model(Precision p, const ModelConfig& m, uint64_t seed, int micro_batch_size,
                                             const std::vector<StageLayout>& chunks, TensorParallel tp,
                                             const std::vector<PipeOp>& ops, const TensorLayout& layout, Recompute rc);

class ChunkedStage final : public StageModel {
 public:
  // chunk[c] computes over layout.slice(first[c], first[c + 1] - first[c]) of the stage's layout.
  ChunkedStage(std::vector<std::unique_ptr<StageModel>> chunks, std::vector<size_t> first_tensor, StageLayout stage);

  int chunks() const override { return int(chunks_.size()); }
  StageModel& chunk(int c) override { return *chunks_.at(size_t(c)); }
  // The pipeline stage (first: holds the embedding, last: the head); its blocks are the chunks'.
  const StageLayout& stage() const override { return stage_; }
  int slots() const override;  // chunk-micro-batches held at once, all chunks
  void bind(void* params, void* grads) override;
  void set_unit_timer(std::function<void(int, bool)> timer) override;
  // Each chunk asks for the units it holds (a unit's tensors lie in one chunk); wte in row chunks is refused.
  void set_unit_io(const UnitIO& io) override;
  size_t activation_elems() const override { return chunks_.front()->activation_elems(); }
  DType activation_dtype() const override { return chunks_.front()->activation_dtype(); }
  size_t activation_bytes_per_slot() const override;  // one micro-batch through every chunk
  size_t kept_activation_bytes() const override;
  size_t work_bytes() const override;

  // A micro-batch's work goes through chunk(c): these throw.
  void set_tokens(int, const int32_t*, const int32_t*) override { whole(); }
  void set_samples(int, const int32_t*) override { whole(); }
  void* stage_input_data(int) override { return whole(); }
  void* stage_output_data(int) override { return whole(); }
  void* grad_buffer_data() override { return whole(); }
  void forward(int, bool, double) override { whole(); }
  double take_loss_sum() override;  // the chunks' sums
  void backward(int, const std::function<void(int)>&) override { whole(); }

 private:
  [[noreturn]] void* whole() const;

  std::vector<std::unique_ptr<StageModel>> chunks_;
  std::vector<size_t> first_;  // chunk c's tensors: [first_[c], first_[c + 1]) of the stage's layout
  StageLayout stage_;
};

}  // namespace gt
