#pragma once
// What the trainer and the pipeline runner need of one pipeline stage of the model, whatever its storage type
// (GPT<float>, GPT<bf16_t>, GPT<fp16_t>: train.precision). Activations cross stages as activation_dtype()
// elements; parameters and gradients are the TrainState's buffers, bound once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/unit_io.hpp"

namespace gt {

struct StageLayout {
  int stage = 0, stages = 1;
  int block_begin = 0, block_end = 0;  // blocks [begin, end) live on this stage
  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }
};

// A model's state that is neither a parameter nor an optimizer's (BatchNorm's running statistics): no gradient,
// updated by forward, checkpointed and agreed over the DP group (src/train/extensions/model_buffers.hpp). The
// values are where the model keeps them, which both the host and the device can address (the vision network's
// Buffers: host memory on host builds, CUDA managed memory on device builds).
struct ModelBuffer {
  std::string name;
  float* data = nullptr;
  size_t size = 0;
};

class StageModel {
 public:
  virtual ~StageModel() = default;
  virtual const StageLayout& stage() const = 0;
  virtual int slots() const = 0;
  // The working parameters (storage type) and the gradient buffer (fp32 for float and the 16-bit types).
  virtual void bind(void* params, void* grads) = 0;
  // Host tokens (B*T each) of the micro-batch held in `slot`: inputs (first stage), targets (last stage).
  virtual void set_tokens(int slot, const int32_t* inputs, const int32_t* targets) = 0;
  // The micro-batch in `slot` as the model family's data source writes it: DataSource::row_elems() int32 words
  // per sample, micro_batch_size samples (GPT: seq_len + 1 tokens, split here into inputs and targets).
  virtual void set_samples(int slot, const int32_t* rows) = 0;
  // (B,T,C) stage input, stage output and the gradient buffer, activation_elems() elements of
  // activation_dtype() (see GPT).
  virtual void* stage_input_data(int slot) = 0;
  virtual void* stage_output_data(int slot) = 0;
  virtual void* grad_buffer_data() = 0;
  virtual size_t activation_elems() const = 0;
  virtual DType activation_dtype() const = 0;
  // loss_scale: d(loss)/d(token loss) times the loss scale; applied in the model's compute type. The last
  // stage adds the micro-batch's summed token losses to an accumulator in device memory (no host copy);
  // take_loss_sum() returns what was added since its last call (0 elsewhere) and restarts it: once per step.
  virtual void forward(int slot, bool with_grad, double loss_scale) = 0;
  virtual double take_loss_sum() = 0;
  // Classifiers: the top-1 hits of the forwards since the last call (the evaluation's accuracy); 0 otherwise.
  virtual double take_hits() { return 0; }
  // Model buffers (above); none for most models.
  virtual std::vector<ModelBuffer> model_buffers() { return {}; }
  virtual void backward(int slot, const std::function<void(int)>& on_unit) = 0;
  // Optional probe around each unit's work in forward and backward (GPT::set_unit_timer).
  virtual void set_unit_timer(std::function<void(int, bool)> timer) = 0;
  // ZeRO (unit_io.hpp): where the units' parameters come from and where their gradients go, when not the bound
  // buffers. After bind(); a model that supports none of it refuses a non-null source or sink.
  virtual void set_unit_io(const UnitIO& io) = 0;
  virtual size_t activation_bytes_per_slot() const = 0;
  virtual size_t work_bytes() const = 0;
  // Activations kept for backward, all slots (a stage of several chunks: each chunk's slots at its own size).
  virtual size_t kept_activation_bytes() const { return size_t(slots()) * activation_bytes_per_slot(); }
  // The model chunks of the stage (interleaved pipeline: src/train/stage_chunks.hpp); one: the stage itself.
  virtual int chunks() const { return 1; }
  virtual StageModel& chunk(int /*c*/) { return *this; }
};

}  // namespace gt
