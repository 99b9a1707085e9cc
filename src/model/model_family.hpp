#pragma once
// The model seam (issue 20): what a model family gives the trainer, the checkpointer, the memory ledger and the run
// report, so that a second family is added without touching them. The trainer asks the family for
//   its tensors        global shapes, split dims, tie rules and units of one pipeline chunk on one TP rank (the
//                      TrainState's layout, hence DP buckets, ZeRO shards, checkpoints and resharding follow);
//   its stage model    forward/backward per micro-batch over that layout (StageModel, stage_model.hpp);
//   its data           a DataSource whose rows the stage model reads (set_samples), checked against the model;
//   its accounting     loss positions per sample (the loss is their mean), the throughput unit, FLOPs per
//                      position (MFU), and the signature a checkpoint records (a resume refuses another one);
//   its refusals       the settings it cannot run, one line each (check).
// GPT (gpt_family.cpp) is the first family, ResNet (src/vision/resnet_family.hpp) the second; make_model_family
// (src/train/model_families.hpp) picks one by model.kind.
#include <memory>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/data/data_source.hpp"
#include "src/model/stage_model.hpp"
#include "src/model/tensor_layout.hpp"

namespace gt {

struct GridShape;
struct PipeOp;
struct TensorParallel;

// What a stage model is built from: the run's storage type, init seed and micro-batch, the stage's chunks, its TP
// group, the schedule's ops (activation slots), the TrainState's layout and the recompute policy.
struct StageBuild {
  Precision precision = Precision::FP32;
  uint64_t seed = 0;
  int micro_batch_size = 1;
  const std::vector<StageLayout>* chunks = nullptr;
  const TensorParallel* tp = nullptr;
  const std::vector<PipeOp>* ops = nullptr;
  const TensorLayout* layout = nullptr;
  Recompute recompute = Recompute::None;
  Comm* dp = nullptr;  // the DP group (a model whose forward reduces over it: sync BN)
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  // Recorded in checkpoints (root attribute "model"): the family and every shape that fixes its tensors.
  virtual std::string signature() const = 0;
  // Loss terms per sample: the step's loss is their mean over the global batch (GPT: seq_len tokens; ResNet: 1).
  virtual int positions_per_sample() const = 0;
  // The report's unit of throughput ("token", "image").
  virtual const char* position_name() const = 0;
  // Model FLOPs of forward + backward per loss position (the MFU numerator; src/core/model_flops.hpp for GPT).
  virtual double train_flops_per_position() const = 0;
  // Blocks a pipeline partitions (GPT: n_layer; a family that refuses pp > 1: its residual blocks).
  virtual int blocks() const = 0;
  // The tensors of one pipeline chunk on one TP rank, in storage (= forward) order.
  virtual std::vector<TensorSpec> tensor_specs(const StageLayout& chunk, int tp_rank, int tp_size) const = 0;
  // The whole model in global shapes.
  std::vector<TensorSpec> global_specs() const { return tensor_specs(StageLayout{0, 1, 0, blocks()}, 0, 1); }
  // The stage's tensors: every chunk's, in chunk order.
  std::vector<TensorSpec> stage_specs(const std::vector<StageLayout>& chunks, int tp_rank, int tp_size) const {
    std::vector<TensorSpec> out;
    for (const StageLayout& c : chunks) {
      std::vector<TensorSpec> s = tensor_specs(c, tp_rank, tp_size);
      out.insert(out.end(), s.begin(), s.end());
    }
    return out;
  }
  virtual std::unique_ptr<StageModel> make_stage(const StageBuild& b) const = 0;
  // The run's data (data.*), refused with one line when it does not fit the model (vocabulary, image shape,
  // classes, a token dataset given to an image model and the reverse).
  virtual std::unique_ptr<DataSource> make_source(const Config& cfg) const = 0;
  // Settings this family cannot run on this grid: gt::Error with one line. Called on every rank alike at start.
  virtual void check(const Config& cfg, const GridShape& grid) const = 0;
};

}  // namespace gt
