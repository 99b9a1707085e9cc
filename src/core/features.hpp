#pragma once
// The features a run turns on, resolved once from the config, and the one table of the pairs that cannot run
// together (issue 20, debt 3). Each row of the table names two features and why they cannot meet; the refusal
// prints both as the config says them and the reason, as one line:
//   config: parallel.dp_shares = "3,1" (uneven) with parallel.zero = 2: ZeRO-2/3 stage gradients per micro-batch ...
// Config::validate and the Trainer check it (every rank alike: the config agrees over ranks before either runs).
// What a single feature needs of the settings around it (interleaving's pp >= 2, a dataset path, ...) stays with
// its own key's validation; this table is only for pairs of features.
#include <string>
#include <vector>

namespace gt {

struct Config;

enum class Feature {
  ResNet,          // model.kind = resnet
  TensorParallel,  // parallel.tp > 1
  Pipeline,        // parallel.pp > 1
  Interleaved,     // parallel.schedule = interleaved
  StageBlocks,     // parallel.stage_blocks set
  Rebalance,       // parallel.rebalance = auto
  Adapt,           // parallel.adapt = monitor | rebalance | full
  AutoLayout,      // parallel.layout = auto
  ZeroSharded,     // parallel.zero >= 1
  ZeroStaged,      // parallel.zero >= 2
  UnevenShares,    // parallel.dp_shares uneven
  TopK,            // compress.method = topk
  CompressFP16,    // compress.method = fp16
  GradWireBF16,    // parallel.grad_reduce_dtype = bf16
  Sparsity24,      // sparsity.pattern = 2:4
  HalfPrecision,   // train.precision = bf16 | fp16
  FP16,            // train.precision = fp16
  Recompute,       // train.recompute = selective | full
  SyncBN,          // model.sync_bn
};

struct Incompatibility {
  Feature a, b;
  const char* reason;
};

// Every pair that cannot run together, in the order they are checked.
const std::vector<Incompatibility>& incompatibilities();

class FeatureSet {
 public:
  explicit FeatureSet(const Config& cfg);
  bool has(Feature f) const;
  // The feature as the config turns it on ("parallel.zero = 2", "compress.method = \"topk\"").
  std::string describe(Feature f) const;
  // gt::Error with the first row of the table whose two features are both on.
  void check() const;

 private:
  std::vector<Feature> on_;
  std::vector<std::string> text_;  // describe(), per feature that is on
};

}  // namespace gt
