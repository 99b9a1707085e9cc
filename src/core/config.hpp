#pragma once
// Run configuration: one typed struct, filled from an input deck (TOML subset) and then from command-line
// overrides `section.key=value`. Every key of the struct is known to a schema; unknown keys, wrong types and
// out-of-range values raise gt::Error naming the key and where it came from.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/core/enums.hpp"

namespace gt {

struct ModelConfig {
  // "gpt" (the transformer below: model.arch picks GPT-2 or Llama blocks) or "resnet" (the convolutional family
  // of src/vision: model.resnet and the image keys; docs/vision.md).
  std::string kind = "gpt";
  std::string resnet = "resnet20";  // resnet: the preset (resnet20, resnet56, resnet18-small, resnet18/34/50)
  int image_size = 28;              // resnet: square images of image_size x image_size x image_channels
  int image_channels = 1;
  int classes = 10;
  bool zero_init_residual = false;  // resnet: each block's last BatchNorm gamma starts at 0 (Goyal et al. 2017)
  bool sync_bn = false;             // resnet: BatchNorm statistics over the DP group (else per rank)
  // resnet: "winograd" lets fp32 3x3 stride-1 convolutions run Winograd F(4x4, 3x3) where oneDNN has it for
  // the CPU (AVX-512); "direct" the direct sums everywhere (docs/vision.md)
  std::string conv_algorithm = "direct";
  int n_layer = 2;
  int d_model = 64;
  int n_head = 4;
  int seq_len = 32;
  int vocab_size = 256;
  double init_std = 0.02;
  // "fused": attention without the T x T probabilities (kernels/attention_fused.hpp, memory linear in T; faster
  // on the CPU, docs/model.md); "materialized": the probabilities stored per block (kernels/attention.hpp). The
  // same function either way, to rounding.
  std::string attention = "fused";
  // "gpt2" or "llama" (RMSNorm, SwiGLU, RoPE, grouped-query attention, untied head, no biases: docs/model.md).
  std::string arch = "gpt2";
  int n_kv_head = 0;          // llama: key/value heads (0: n_head); must divide n_head
  int ffn_hidden = 0;         // llama: SwiGLU width (0: 8 d_model / 3 rounded up to a multiple of 256, as Llama)
  double rope_theta = 10000;  // llama: RoPE base
  double norm_eps = 1e-5;     // llama: RMSNorm epsilon

  // The typed views of arch and attention (code outside src/core never compares their text); they throw
  // gt::Error naming the key for a name outside the table (Config::validate reports it first).
  ModelKind model_kind() const;
  bool resnet_kind() const { return model_kind() == ModelKind::ResNet; }
  ModelArch arch_kind() const;
  AttentionKernel attention_kernel() const;
  ConvAlgorithm conv_algorithm_kind() const;
  bool llama() const { return arch_kind() == ModelArch::Llama; }
  bool fused_attention() const { return attention_kernel() == AttentionKernel::Fused; }
};

// Llama's default SwiGLU width for d_model C: 2/3 of 4C rounded up, then up to a multiple of 256 (Meta's reference
// code with multiple_of = 256 and no multiplier). One function for the model (ModelDims) and the planner.
inline long llama_default_ffn(long C) { return ((8 * C + 2) / 3 + 255) / 256 * 256; }

struct TrainConfig {
  int steps = 20;
  int micro_batch_size = 4;   // sequences per micro-batch on one DP rank
  int micro_batches = 1;      // gradient accumulation steps (and pipeline micro-batches)
  int64_t seed = 1234;
  double lr = 1e-3;
  double min_lr = 1e-4;
  int warmup_steps = 0;
  int decay_steps = 0;        // cosine decay length after warm-up; 0 means until the last step
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;     // global gradient-norm clip; 0 disables
  std::string optimizer = "adamw";  // "adamw" or "sgd" (momentum, coupled weight decay: the ResNet recipe)
  double momentum = 0.9;            // sgd, lars: momentum
  double lars_eta = 0.001;          // lars: the trust coefficient (You et al. 2017)
  // "linear": lr x global batch / lr_reference_batch, reached by a linear warm-up from lr over warmup_steps
  // (Goyal et al. 2017; src/train/optim/lr_scaling.hpp); "none": lr as given.
  std::string lr_scaling = "none";
  int lr_reference_batch = 256;
  // Epoch-based runs (src/train/optim/lr_schedule.hpp): epochs > 0 sets steps to ceil(epochs x train samples / global
  // batch) and warmup_epochs the warm-up likewise; lr_milestones are then in epochs, else in steps.
  double epochs = 0;
  double warmup_epochs = 0;
  std::string lr_decay = "cosine";  // "cosine" (to min_lr) or "step" (x lr_decay_factor at each milestone)
  std::string lr_milestones;        // "30,60,80": where lr_decay = step multiplies by lr_decay_factor
  double lr_decay_factor = 0.1;
  std::vector<double> lr_milestone_points() const;  // lr_milestones parsed (config.cpp); throws on a bad list
  int max_steps_per_run = 0;  // stop (checkpoint, exit 75) after this many steps in one invocation; 0: no limit
  std::string stop_file;      // if this file exists at a step boundary: stop as on SIGUSR1 (checkpoint, exit 75)
  // Bad steps (src/train/step_guard.hpp, docs/reliability.md): non-finite, beyond a bound, or a spike.
  std::string nonfinite = "stop";     // "stop", "skip" or "rollback"
  int nonfinite_max_consecutive = 5;  // skip: bad steps in a row; rollback: rollbacks to one checkpoint; then stop
  double loss_bound = 1000.0;         // a loss above this is bad (a diverged cross-entropy); 0: no bound
  double gnorm_bound = 0.0;           // an (unscaled) gradient norm above this is bad; 0: no bound
  double spike_zscore = 0.0;          // > 0: a loss or norm this many deviations above its window mean is bad
  int spike_window = 100;             // good steps in the spike detector's window
  double watchdog_s = 300;            // a rank blocked this long in one communication call aborts the job; 0: off
  // Mixed precision (docs/precision.md): the working type of weights and stored activations.
  std::string precision = "fp32";    // "fp32", "bf16" or "fp16"
  // Activation recomputation (docs/zero.md): "none"; "selective" recomputes the attention core (the T x T
  // probabilities) in backward; "full" keeps only each block's input and recomputes the block in backward.
  std::string recompute = "none";
  // Dynamic loss scaling (Megatron/DeepSpeed semantics): "auto" (dynamic for fp16, none otherwise),
  // "dynamic", "none".
  std::string loss_scale = "auto";
  double loss_scale_initial = 65536.0;  // 2^16 (DeepSpeed, PyTorch GradScaler)
  double loss_scale_min = 1.0;          // a run whose scale would have to go below this stops with an error
  double loss_scale_growth = 2.0;       // after loss_scale_window clean steps in a row
  double loss_scale_backoff = 0.5;      // once loss_scale_hysteresis overflows used up the hysteresis
  int loss_scale_window = 1000;
  int loss_scale_hysteresis = 2;
};

struct ParallelConfig {
  int tp = 1;
  bool sequence_parallel = false;     // tp > 1: norms and residuals split along the token rows (docs/model.md)
  int pp = 1;
  int dp = 0;                         // 0: world size / (tp * pp)
  std::string schedule = "1f1b";      // "1f1b", "gpipe" or "interleaved" (1F1B over virtual_stages chunks per stage)
  int virtual_stages = 1;             // interleaved: model chunks per pipeline stage (chunk c of stage s: layer block c pp + s)
  std::string allreduce = "auto";     // "auto" (shm on one node, else mpi), "mpi" (library collective), "ring"
                                      // (send/recv), "shm" (node shared memory)
  std::string comm = "auto";          // device groups on "mpi", "nccl", or "auto" (NCCL on CUDA builds that have it)
  std::string grad_reduce_dtype = "fp32";  // wire type of the DP gradient all-reduce: "fp32" or "bf16"
  double bucket_mb = 25.0;            // DP gradient bucket size
  int zero = 0;                       // ZeRO stage over the DP group: 0 none, 1 optimizer state, 2 + gradients,
                                      // 3 + parameters (docs/zero.md)
  int wte_chunk_rows = 0;             // ZeRO 2/3 with staged gradients: rows of wte per chunk (0: a block's worth)
  int blas_threads = 1;
  std::string layout = "manual";      // "auto": tp/pp/dp chosen by the planner at start (docs/planner.md)
  std::string cluster;                // layout = auto: a cluster description (name or path); empty: measured
  std::string rebalance = "off";      // "auto": re-partition the pipeline from measured block times, once
  int rebalance_after = 3;            // steps timed before deciding
  double rebalance_gain = 0.1;        // re-partition when slowest stage now / after >= 1 + this
  std::string adapt = "off";          // "monitor": name straggling ranks per step; "rebalance": and move pipeline
                                      // blocks between stages during the run; "full": switch (tp, pp, dp) live
                                      // when the calibrated planner predicts a gain (docs/adaptive.md)
  int adapt_interval = 10;            // adapt = rebalance: steps between two evaluations (moves) at least
  double straggler_ratio = 1.25;      // adapt != off: a rank above this x its peers' median compute straggles
  std::string stage_blocks;           // blocks per pipeline stage, "3,2,2,1"; empty: the cost model's split
  std::string dp_shares;              // micro-batches per step per DP replica, "3,1" (sum = dp x micro_batches);
                                      // empty: micro_batches each (docs/adaptive.md, "Data-parallel shares")
  // Not keys: what layout = auto chose at start (src/cli/auto_layout.hpp), for the start line and summary.json.
  std::string auto_choice, auto_runner_up, auto_cluster;
  std::string rebalanced_from;        // set by a rebalance: the stage times before, logged beside those after
  // stage_blocks as numbers (empty when unset); throws gt::Error naming the key on a malformed list.
  std::vector<int> stage_block_counts() const;
  // dp_shares as numbers (empty when unset); throws gt::Error naming the key on a malformed list or a share < 1.
  std::vector<int> dp_share_counts() const;
};

struct DataConfig {
  std::string source = "synthetic";   // "synthetic" or "hdf5"
  std::string path;                   // HDF5 token dataset for source = "hdf5"
  double synthetic_noise = 0.1;       // probability that a synthetic token is random rather than the rule's
  int val_every = 0;                  // validation loss every N steps (0: never)
  int val_batches = 2;
  int prefetch = 1;                   // background prefetch of the next batch
  bool augment = true;                // images: random crop (pad 2 or 4) and horizontal flip of training images
};

struct CheckpointConfig {
  std::string dir;                    // empty: <output.dir>/checkpoints
  int every = 0;                      // 0: only at the end and on signals
  int keep = 3;
  std::string resume = "none";        // "none", "auto", or a checkpoint path
  bool save_final = true;
};

struct OutputConfig {
  std::string dir = "runs/default";
  int log_every = 1;
  double peak_gflops = 0.0;           // per-rank peak for MFU; 0: the core's, measured and cached (src/train/report/host_peak.hpp)
};

// Kernel libraries (docs/kernels.md).
struct KernelsConfig {
  std::string gemm = "auto";        // host GEMM library: "auto" (oneDNN when built in, else OpenBLAS), "onednn", "openblas"
};

// Gradient compression of the DP all-reduce (issue 11, docs/compression.md).
struct CompressConfig {
  std::string method = "none";        // "none" (dense fp32 all-reduce), "topk" (error feedback + top-k), or
                                      // "bf16" / "fp16" (the dense all-reduce in 16-bit)
  double density = 0.04;              // top-k: fraction of each bucket's entries sent per step, (0, 1]
  bool error_feedback = true;         // top-k: keep what was not sent for the next step (false: forget it)
  int warmup_steps = 0;               // top-k: DGC's density warm-up from 25% to `density` over these steps
  std::string select = "sampled";     // top-k: "exact" (nth_element) or "sampled" (DGC's threshold)
  double local_clip = 0;              // top-k: clip each rank's local gradient to this L2 norm before error feedback (0: off)
  std::string transport = "auto";     // top-k: "auto" (fewer bytes of dense / all-gather), "allgather", "shared_index"
  std::string values = "fp32";        // top-k: the values' wire type, "fp32", "bf16", "fp16" (indices are int32)
};

// 2:4 structured sparsity of the linear layers' weights (issue 11, docs/sparsity.md).
struct SparsityConfig {
  std::string pattern = "none";       // "none" or "2:4" (2 of every 4 weights along the input dimension kept)
  std::string recipe = "srste";       // "srste" (mask from magnitudes every step) or "asp" (dense, then prune once)
  int asp_step = 100;                 // asp: prune after this many optimizer updates (0: at initialisation)
  double srste_decay = 2e-4;          // srste: lambda of the decay lambda*(1-mask)*W added to pruned weights' gradients
};

// The typed view of every key that takes one of a few names (src/core/enums.hpp), and of parallel.zero.
// Code outside src/core branches on these, never on the text of a value.
struct ConfigChoices {
  Precision precision = Precision::FP32;
  Recompute recompute = Recompute::None;
  LossScaleMode loss_scale = LossScaleMode::Auto;
  NonfinitePolicy nonfinite = NonfinitePolicy::Stop;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  AllreduceChoice allreduce = AllreduceChoice::Auto;
  CommChoice comm = CommChoice::Auto;
  GradWire grad_reduce_dtype = GradWire::FP32;
  LayoutMode layout = LayoutMode::Manual;
  RebalanceMode rebalance = RebalanceMode::Off;
  AdaptMode adapt = AdaptMode::Off;
  DataSourceKind data_source = DataSourceKind::Synthetic;
  GemmChoice gemm = GemmChoice::Auto;
  CompressMethod compress = CompressMethod::None;
  TopkSelect topk_select = TopkSelect::Sampled;
  TopkTransport topk_transport = TopkTransport::Auto;
  Precision topk_values = Precision::FP32;
  SparsityPattern sparsity = SparsityPattern::None;
  SparsityRecipe sparsity_recipe = SparsityRecipe::SRSTE;
  ZeroStage zero = ZeroStage::None;
  ModelKind model = ModelKind::GPT;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  LrScaling lr_scaling = LrScaling::None;
  LrDecay lr_decay = LrDecay::Cosine;
};

struct Config {
  ModelConfig model;
  TrainConfig train;
  ParallelConfig parallel;
  DataConfig data;
  CheckpointConfig checkpoint;
  OutputConfig output;
  CompressConfig compress;
  KernelsConfig kernels;
  SparsityConfig sparsity;

  // Apply a deck file (`[section]` / `key = value`); throws gt::Error with file:line on any problem.
  void load_file(const std::string& path);
  // Apply one `section.key=value` override.
  void set(const std::string& assignment, const std::string& origin = "command line");
  // Checks that do not need the world size (positive sizes, divisibility of heads, ...); returns the typed view
  // of the named keys, every name checked.
  ConfigChoices validate() const;
  // The typed view, derived from the values as they are now (a table lookup per key: cheap, and never stale
  // when a field is assigned after validate(), as tests and the auto layout do). Throws gt::Error naming the
  // key for a name outside its table (validate() reports those first).
  ConfigChoices choices() const;
  // parallel.schedule = interleaved against a pipeline degree pp (validate() with parallel.pp; the trainer with the
  // grid's, which parallel.layout = auto chooses later): throws gt::Error naming the value that does not fit.
  void check_interleaving(int pp) const;
  // Model chunks per pipeline stage: parallel.virtual_stages under the interleaved schedule, else 1.
  int pipeline_chunks() const { return parallel.schedule == "interleaved" ? parallel.virtual_stages : 1; }
  Precision precision() const { return choices().precision; }
  Recompute recompute() const { return choices().recompute; }
  bool dynamic_loss_scale() const;  // train.loss_scale resolved against train.precision
  // Flat `section.key -> value` text of every key, for the summary file and checkpoints.
  std::map<std::string, std::string> to_map() const;
  std::string to_toml() const;
  // checkpoint.dir, or <output.dir>/checkpoints when it is empty.
  std::string checkpoint_dir() const { return checkpoint.dir.empty() ? output.dir + "/checkpoints" : checkpoint.dir; }
  // Names of all keys, for help output.
  static std::vector<std::string> keys();
  // The documentation of every key as a Markdown table (key, type or choices, default, one line): what
  // `gridtrain keys --doc` prints and docs/config.md holds between its markers (test cli_config_doc).
  static std::string keys_doc();
};

// Path of a preset deck by name (`tiny` -> <inputs dir>/tiny.toml), or the argument itself if it is a path.
std::string resolve_deck(const std::string& name_or_path);

}  // namespace gt
