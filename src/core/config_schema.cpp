// The key table (config_schema.hpp): its rows, a value's text, the choice check, and the key list and the
// Markdown table printed from it (`gridtrain keys [--doc]`, docs/config.md).
#include "src/core/config_schema.hpp"

#include <algorithm>
#include <sstream>

#include "src/core/error.hpp"

namespace gt {
namespace config_schema {

template <>
std::vector<std::string> names<Precision>() {
  std::vector<std::string> out = enum_names<Precision>();
  out.erase(std::find(out.begin(), out.end(), std::string(enum_name(Precision::FP8))));
  return out;
}

namespace {
// The rows in the order of `gridtrain keys` (grouped by feature; to_toml() regroups them by section), in two
// parts only to keep each function short.
std::vector<Field> schema_model_train_parallel_data(Config& c) {
  return {
      {"model.n_layer", Kind::Int, &c.model.n_layer, "transformer blocks (L)"},
      {"model.d_model", Kind::Int, &c.model.d_model, "width of the residual stream (C); divisible by n_head"},
      {"model.n_head", Kind::Int, &c.model.n_head, "attention heads"},
      {"model.attention", Kind::String, &c.model.attention, "fused: causal attention without the T x T probabilities (memory linear in seq_len); materialized: the probabilities stored per block; the same function to rounding (docs/model.md)", names<AttentionKernel>()},
      {"model.arch", Kind::String, &c.model.arch, "gpt2 (LayerNorm, GELU, learned positions, tied head) or llama (RMSNorm, SwiGLU, RoPE, grouped-query attention, untied head, no biases; docs/model.md)", names<ModelArch>()},
      {"model.n_kv_head", Kind::Int, &c.model.n_kv_head, "llama: key/value heads (grouped-query attention); divides n_head; parallel.tp divides it or is a multiple of it (then each head is replicated on tp / n_kv_head TP ranks); 0: n_head"},
      {"model.ffn_hidden", Kind::Int, &c.model.ffn_hidden, "llama: SwiGLU width; divisible by parallel.tp; 0: 2/3 of 4 d_model rounded up to a multiple of 256"},
      {"model.rope_theta", Kind::Double, &c.model.rope_theta, "llama: RoPE base (angle t theta^(-2i/head dim))"},
      {"model.norm_eps", Kind::Double, &c.model.norm_eps, "llama: RMSNorm epsilon"},
      {"model.seq_len", Kind::Int, &c.model.seq_len, "tokens per sequence (T)"},
      {"model.vocab_size", Kind::Int, &c.model.vocab_size, "vocabulary (V); divisible by parallel.tp"},
      {"model.init_std", Kind::Double, &c.model.init_std, "standard deviation of the normal weight init (GPT-2: 0.02; residual projections scaled by 1/sqrt(2L))"},
      {"train.steps", Kind::Int, &c.train.steps, "optimizer steps of the whole run (a resumed run continues to this step)"},
      {"train.micro_batch_size", Kind::Int, &c.train.micro_batch_size, "sequences per micro-batch on one DP rank; global batch = micro_batch_size x micro_batches x dp"},
      {"train.micro_batches", Kind::Int, &c.train.micro_batches, "micro-batches per step: gradient accumulation and pipeline micro-batches"},
      {"train.seed", Kind::Int64, &c.train.seed, "seed of the weight init and of the data (synthetic tokens, the HDF5 sampling order)"},
      {"train.lr", Kind::Double, &c.train.lr, "peak learning rate, reached after warmup_steps (linear warm-up)"},
      {"train.min_lr", Kind::Double, &c.train.min_lr, "learning rate at the end of the cosine decay"},
      {"train.warmup_steps", Kind::Int, &c.train.warmup_steps, "steps of linear warm-up to lr"},
      {"train.decay_steps", Kind::Int, &c.train.decay_steps, "cosine decay from lr to min_lr over this many steps after warm-up; 0: the rest of the run"},
      {"train.weight_decay", Kind::Double, &c.train.weight_decay, "AdamW decoupled weight decay (matrices and embeddings; not biases or layer norms)"},
      {"train.beta1", Kind::Double, &c.train.beta1, "AdamW beta1, in [0, 1)"},
      {"train.beta2", Kind::Double, &c.train.beta2, "AdamW beta2, in [0, 1)"},
      {"train.eps", Kind::Double, &c.train.eps, "AdamW epsilon"},
      {"train.grad_clip", Kind::Double, &c.train.grad_clip, "global gradient-norm clip; 0 disables"},
      {"train.max_steps_per_run", Kind::Int, &c.train.max_steps_per_run, "stop with a checkpoint and exit 75 after this many steps in one invocation; 0: no limit"},
      {"train.stop_file", Kind::String, &c.train.stop_file, "if this file exists at a step boundary: stop as on SIGUSR1 (checkpoint, exit 75)"},
      {"train.nonfinite", Kind::String, &c.train.nonfinite, "what a bad step does (non-finite, above a bound, or a spike): stop, skip its update, or roll back to the last checkpoint (docs/reliability.md)", names<NonfinitePolicy>()},
      {"train.nonfinite_max_consecutive", Kind::Int, &c.train.nonfinite_max_consecutive, "bad steps in a row under skip, rollbacks to one checkpoint under rollback, before the run stops"},
      {"train.loss_bound", Kind::Double, &c.train.loss_bound, "a loss above this is a bad step (a diverged cross-entropy); 0: no bound"},
      {"train.gnorm_bound", Kind::Double, &c.train.gnorm_bound, "an (unscaled) gradient norm above this is a bad step; 0: no bound"},
      {"train.spike_zscore", Kind::Double, &c.train.spike_zscore, "a loss or gradient norm this many standard deviations above the mean of the last spike_window good steps is a bad step; 0: off"},
      {"train.spike_window", Kind::Int, &c.train.spike_window, "good steps in the spike detector's window"},
      {"train.watchdog_s", Kind::Double, &c.train.watchdog_s, "a rank blocked this long in one communication call names the missing ranks and aborts the job; 0: off (docs/reliability.md)"},
      {"parallel.tp", Kind::Int, &c.parallel.tp, "tensor-parallel ranks (Megatron split of attention and MLP)"},
      {"parallel.sequence_parallel", Kind::Bool, &c.parallel.sequence_parallel, "with tp > 1: the norms, residual adds and the activations between the tensor-parallel regions are split over the tp ranks along the token rows (Korthikanti et al. 2022): an all-gather before each column-parallel GEMM and a reduce-scatter after each row-parallel one instead of all-reduces; needs seq_len divisible by tp; a no-op with tp = 1 (docs/model.md)"},
      {"parallel.pp", Kind::Int, &c.parallel.pp, "pipeline stages"},
      {"parallel.dp", Kind::Int, &c.parallel.dp, "data-parallel ranks; 0: the rest of the world (world size / (tp x pp))"},
      {"train.precision", Kind::String, &c.train.precision, "working type of weights and stored activations; masters, gradients and optimizer stay fp32 (docs/precision.md)", names<Precision>()},
      {"train.recompute", Kind::String, &c.train.recompute, "selective: the attention probabilities are recomputed in backward; full: only each block's input is kept and the block is recomputed; both give bitwise the gradients of none (docs/zero.md)", names<Recompute>()},
      {"train.loss_scale", Kind::String, &c.train.loss_scale, "loss scaling: auto = dynamic for fp16, none otherwise (docs/precision.md)", names<LossScaleMode>()},
      {"train.loss_scale_initial", Kind::Double, &c.train.loss_scale_initial, "initial dynamic loss scale (2^16, as DeepSpeed and PyTorch's GradScaler)"},
      {"train.loss_scale_min", Kind::Double, &c.train.loss_scale_min, "a run whose scale would go below this stops with an error; at most loss_scale_initial"},
      {"train.loss_scale_growth", Kind::Double, &c.train.loss_scale_growth, "factor applied after loss_scale_window clean steps in a row; > 1"},
      {"train.loss_scale_backoff", Kind::Double, &c.train.loss_scale_backoff, "factor applied on an overflow once the hysteresis is used up; in (0, 1)"},
      {"train.loss_scale_window", Kind::Int, &c.train.loss_scale_window, "clean steps in a row before the scale grows"},
      {"train.loss_scale_hysteresis", Kind::Int, &c.train.loss_scale_hysteresis, "overflows tolerated before the scale backs off"},
      {"parallel.schedule", Kind::String, &c.parallel.schedule, "pipeline schedule: 1f1b (one forward, one backward), gpipe (all forwards first) or interleaved (1F1B over virtual_stages model chunks per stage, chunk c of stage s holding layer block c pp + s; docs/planner.md)", names<PipelineSchedule>()},
      {"parallel.virtual_stages", Kind::Int, &c.parallel.virtual_stages, "schedule = interleaved: model chunks per pipeline stage (needs pp >= 2, n_layer divisible by pp x virtual_stages, micro_batches a multiple of pp); 1 otherwise"},
      {"parallel.allreduce", Kind::String, &c.parallel.allreduce, "DP all-reduce: auto = shm when the group is on one node, else mpi; mpi = the library's collective; ring = send/recv; shm = node shared memory", names<AllreduceChoice>()},
      {"parallel.comm", Kind::String, &c.parallel.comm, "library of the TP/PP/DP groups; auto = NCCL on CUDA builds that have it, else MPI", names<CommChoice>()},
      {"parallel.grad_reduce_dtype", Kind::String, &c.parallel.grad_reduce_dtype, "wire type of the dense DP gradient all-reduce; bf16 is the path of compress.method = bf16 (docs/compression.md)", names<GradWire>()},
      {"parallel.bucket_mb", Kind::Double, &c.parallel.bucket_mb, "DP gradient bucket size in MiB (buckets are reduced as backward completes them)"},
      {"parallel.zero", Kind::Int, &c.parallel.zero, "ZeRO stage over the DP group: 0 none; 1 AdamW moments sharded; 2 gradients reduce-scattered to their shard too; 3 parameters sharded too, each unit all-gathered before use with the next prefetched; dp=1: a no-op (docs/zero.md)"},
      {"parallel.wte_chunk_rows", Kind::Int, &c.parallel.wte_chunk_rows, "ZeRO 2/3 with staged gradients: rows of the tied wte per chunk; 0: as many rows as fit in the largest block (docs/zero.md)"},
      {"parallel.blas_threads", Kind::Int, &c.parallel.blas_threads, "threads of the host GEMM library per rank"},
      {"parallel.layout", Kind::String, &c.parallel.layout, "auto: tp/pp/dp chosen by the planner at start for the world size, the model and the deck's micro-batching (a tp or pp above 1 stays fixed, dp must be 0; docs/planner.md)", names<LayoutMode>()},
      {"parallel.cluster", Kind::String, &c.parallel.cluster, "layout = auto only: a cluster description (name in inputs/clusters/ or a path); empty: this machine, measured at start"},
      {"parallel.rebalance", Kind::String, &c.parallel.rebalance, "auto: re-partition the pipeline once from measured block times (docs/planner.md)", names<RebalanceMode>()},
      {"parallel.rebalance_after", Kind::Int, &c.parallel.rebalance_after, "steps timed before the rebalance decides"},
      {"parallel.adapt_interval", Kind::Int, &c.parallel.adapt_interval, "parallel.adapt = rebalance: at least this many steps between two evaluations of the pipeline partition (moves) or, with pp = 1, of the data-parallel shares; full: of those and of the layout"},
      {"parallel.straggler_ratio", Kind::Double, &c.parallel.straggler_ratio, "parallel.adapt != off: a rank is a straggler when its compute is at least this multiple of its stage peers' median in 4 of the last 5 steps (and stops being one below 1 + 0.4 x (this - 1) for 5 steps); raise it on machines whose step-to-step noise is larger than 25%"},
      {"parallel.rebalance_gain", Kind::Double, &c.parallel.rebalance_gain, "re-partition when the slowest stage would shrink by at least this fraction"},
      {"parallel.adapt", Kind::String, &c.parallel.adapt, "monitor: name the ranks whose compute is consistently slower than their peers' (metrics.jsonl, the log; docs/adaptive.md); rebalance: and move pipeline blocks between stages when a stage stays slower (in memory, losses unchanged), or with pp = 1 move micro-batches between data-parallel replicas (shares from measured speed; dp > 1, zero <= 1); full: rebalance where it can run, and switch to another layout of the same ranks (tp, pp, dp, ZeRO stage, micro-batch size at half, equal or twice the current; the global batch kept) when the planner calibrated from this run predicts a gain above parallel.rebalance_gain and the measured noise, switching back when the measured gain is not there, never switching while a rank or a stage is measurably slower than its peers or the rebalancer has made the shares uneven (a slow device is the rebalancer's)", names<AdaptMode>()},
      {"parallel.stage_blocks", Kind::String, &c.parallel.stage_blocks, "blocks per pipeline stage, as \"3,2,2,1\" (count = pp, sum = n_layer); empty: the cost model's split"},
      {"parallel.dp_shares", Kind::String, &c.parallel.dp_shares, "micro-batches per step per DP replica, as \"3,1\" (count = dp, each at least 1, sum = dp x train.micro_batches): uneven shares for ranks of unequal speed, the same update as the even split within fp32 rounding; pp = 1, zero <= 1, no top-k (docs/adaptive.md); empty: train.micro_batches each"},
      {"data.source", Kind::String, &c.data.source, "synthetic: a learnable token rule with noise; hdf5: a token dataset made by gridtrain prepare (docs/data.md)", names<DataSourceKind>()},
      {"data.path", Kind::String, &c.data.path, "the HDF5 token dataset for source = hdf5"},
      {"data.synthetic_noise", Kind::Double, &c.data.synthetic_noise, "probability that a synthetic token is random rather than the rule's, in [0, 1]"},
      {"data.val_every", Kind::Int, &c.data.val_every, "validation loss every this many steps; 0: never"},
      {"data.val_batches", Kind::Int, &c.data.val_batches, "global batches of the validation split per validation"},
      {"data.prefetch", Kind::Int, &c.data.prefetch, "batches prefetched in the background; 0: none"},
  };
}

std::vector<Field> schema_checkpoint_output_features(Config& c) {
  return {
      {"checkpoint.dir", Kind::String, &c.checkpoint.dir, "where checkpoints go; empty: <output.dir>/checkpoints (docs/checkpoints.md)"},
      {"checkpoint.every", Kind::Int, &c.checkpoint.every, "a checkpoint every this many steps; 0: only at the end and on signals"},
      {"checkpoint.keep", Kind::Int, &c.checkpoint.keep, "checkpoints kept; older ones are removed once a newer one is complete"},
      {"checkpoint.resume", Kind::String, &c.checkpoint.resume, "none, auto (the latest complete checkpoint in checkpoint.dir, if any) or a checkpoint path"},
      {"checkpoint.save_final", Kind::Bool, &c.checkpoint.save_final, "write a checkpoint after the last step"},
      {"output.dir", Kind::String, &c.output.dir, "run directory: config.toml, metrics.jsonl, summary.json, checkpoints"},
      {"output.log_every", Kind::Int, &c.output.log_every, "a step line every this many steps (bad steps always get one)"},
      {"output.peak_gflops", Kind::Double, &c.output.peak_gflops, "MFU's per-rank peak in GFLOP/s; 0: one core's measured peak, cached per CPU model (CPUs), the datasheet peak (GPUs) (docs/precision.md, MFU)"},
      {"kernels.gemm", Kind::String, &c.kernels.gemm, "host GEMM library: auto = oneDNN when built in, else OpenBLAS; the start line names it (docs/kernels.md)", names<GemmChoice>()},
      {"compress.method", Kind::String, &c.compress.method, "DP gradient compression: none = dense fp32 all-reduce; topk = error feedback + top-k per bucket; bf16, fp16 = the dense all-reduce in 16-bit (docs/compression.md)", names<CompressMethod>()},
      {"compress.density", Kind::Double, &c.compress.density, "top-k: fraction of each bucket's entries sent per step, in (0, 1]"},
      {"compress.error_feedback", Kind::Bool, &c.compress.error_feedback, "top-k: keep what was not sent for the next step"},
      {"compress.warmup_steps", Kind::Int, &c.compress.warmup_steps, "top-k: DGC's density warm-up from 25% to density over these steps; 0: none"},
      {"compress.select", Kind::String, &c.compress.select, "top-k: sampled = DGC's threshold from a sample; exact = nth_element", names<TopkSelect>()},
      {"compress.local_clip", Kind::Double, &c.compress.local_clip, "top-k: each rank's local gradient clipped to this L2 norm before error feedback (DGC); 0: off"},
      {"compress.transport", Kind::String, &c.compress.transport, "top-k: auto = the fewer bytes of dense and all-gather per bucket; allgather; shared_index = a rotating leader's indices, values all-reduced", names<TopkTransport>()},
      {"compress.values", Kind::String, &c.compress.values, "top-k only: the values' wire type (indices are int32; the rounding error stays in the residual)", names<Precision>()},
      {"sparsity.pattern", Kind::String, &c.sparsity.pattern, "2:4 = 2 of every 4 weights along the input dimension of qkv, attn proj, fc and mlp proj kept (docs/sparsity.md)", names<SparsityPattern>()},
      {"sparsity.recipe", Kind::String, &c.sparsity.recipe, "srste = mask from magnitudes every step with the masked decay; asp = dense, then one prune", names<SparsityRecipe>()},
      {"sparsity.asp_step", Kind::Int, &c.sparsity.asp_step, "asp: prune after this many optimizer updates (0: at initialisation)"},
      {"sparsity.srste_decay", Kind::Double, &c.sparsity.srste_decay, "srste: lambda of the decay lambda x (1 - mask) x W added to pruned weights' gradients"},
  };
}

// The rows of the model families beyond GPT (model.kind = resnet, docs/vision.md) and their training recipe.
std::vector<Field> schema_model_family(Config& c) {
  return {
      {"model.kind", Kind::String, &c.model.kind, "the model family: gpt (the transformer; model.arch picks its blocks) or resnet (convolutional, images; model.resnet and model.image_*; docs/vision.md)", names<ModelKind>()},
      {"model.resnet", Kind::String, &c.model.resnet, "resnet: the preset, resnet8, resnet20 or resnet56 (small-image form), resnet18-small (ResNet-18's stages on a 3x3 stem), resnet18, resnet34, resnet50 (ImageNet form)"},
      {"model.image_size", Kind::Int, &c.model.image_size, "resnet: images are image_size x image_size pixels (a dataset must match)"},
      {"model.image_channels", Kind::Int, &c.model.image_channels, "resnet: channels per pixel (1 grey, 3 RGB)"},
      {"model.classes", Kind::Int, &c.model.classes, "resnet: classes of the classifier (labels in [0, classes))"},
      {"model.zero_init_residual", Kind::Bool, &c.model.zero_init_residual, "resnet: start each residual block's last BatchNorm gamma at 0, so every block begins as the identity (Goyal et al. 2017, for large batches)"},
      {"model.conv_algorithm", Kind::String, &c.model.conv_algorithm, "resnet: winograd runs the fp32 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) where oneDNN has it for the CPU (AVX-512; 1.4-1.8x faster passes on ResNet-50's layers, ~2x the direct sums' rounding error, ~1e-6 relative); direct everywhere else and under bf16/fp16 (docs/vision.md)", names<ConvAlgorithm>()},
      {"model.sync_bn", Kind::Bool, &c.model.sync_bn, "resnet: BatchNorm's training statistics over the whole DP group's batch (PyTorch's SyncBatchNorm: 2 small all-reduces per layer forward, 1 backward); false: each rank's own (docs/vision.md)"},
      {"train.optimizer", Kind::String, &c.train.optimizer, "adamw, or sgd with momentum and coupled weight decay (PyTorch's SGD; the ResNet recipe), or lars: that sgd with each decayed tensor's step scaled by its trust ratio (You et al. 2017, for very large batches); all skip decay on biases and norms", names<OptimizerKind>()},
      {"train.momentum", Kind::Double, &c.train.momentum, "sgd, lars: momentum, in [0, 1)"},
      {"train.lars_eta", Kind::Double, &c.train.lars_eta, "lars: the trust coefficient eta in eta x |w| / (|g| + weight_decay x |w|), > 0"},
      {"train.lr_scaling", Kind::String, &c.train.lr_scaling, "linear: the peak rate is lr x global batch / lr_reference_batch, reached by a linear warm-up from lr over warmup_steps (Goyal et al. 2017); none: lr as given", names<LrScaling>()},
      {"train.lr_reference_batch", Kind::Int, &c.train.lr_reference_batch, "lr_scaling = linear: the global batch that lr is meant for (256 in the ResNet recipe)"},
      {"train.epochs", Kind::Double, &c.train.epochs, "> 0: train this many epochs of the training split (steps = ceil(epochs x samples / global batch), replacing train.steps); needs a dataset of fixed size"},
      {"train.warmup_epochs", Kind::Double, &c.train.warmup_epochs, "> 0: the warm-up in epochs of the training split (replaces train.warmup_steps, which must then be 0)"},
      {"train.lr_decay", Kind::String, &c.train.lr_decay, "after warm-up: cosine from lr to min_lr over decay_steps, or step: lr x lr_decay_factor at each of lr_milestones (the ResNet recipe's /10 at epochs 30, 60, 80)", names<LrDecay>()},
      {"train.lr_milestones", Kind::String, &c.train.lr_milestones, "lr_decay = step: ascending comma-separated points, in epochs when train.epochs > 0, else in steps (\"30,60,80\")"},
      {"train.lr_decay_factor", Kind::Double, &c.train.lr_decay_factor, "lr_decay = step: the factor at each milestone, in (0, 1]"},
      {"data.augment", Kind::Bool, &c.data.augment, "model.kind = resnet: training images randomly cropped from a zero-padded copy (pad image_size / 8) and flipped, by seed and sample index (a resumed run sees the same images)"},
  };
}
}  // namespace

std::vector<Field> schema(Config& c) {
  std::vector<Field> all = schema_model_train_parallel_data(c);
  for (Field& f : schema_model_family(c)) all.push_back(std::move(f));
  for (Field& f : schema_checkpoint_output_features(c)) all.push_back(std::move(f));
  return all;
}

std::string format(const Field& f) {
  std::ostringstream os;
  os.precision(17);
  switch (f.kind) {
    case Kind::Int: os << *static_cast<int*>(f.ptr); break;
    case Kind::Int64: os << *static_cast<int64_t*>(f.ptr); break;
    case Kind::Double: os << *static_cast<double*>(f.ptr); break;
    case Kind::Bool: os << (*static_cast<bool*>(f.ptr) ? "true" : "false"); break;
    case Kind::String: os << '"' << *static_cast<std::string*>(f.ptr) << '"'; break;
  }
  return os.str();
}

// A key with choices holds one of them: checked where the value comes in and again in validate() (for
// values set on the struct directly).
void check_choice(const Field& f, const std::string& where) {
  if (f.choices.empty()) return;
  const std::string& v = *static_cast<const std::string*>(f.ptr);
  std::string names;
  for (const std::string& c : f.choices) {
    if (v == c) return;
    names += (names.empty() ? "\"" : ", \"") + c + "\"";
  }
  throw Error(where + "config key '" + f.key + "' must be one of " + names + ", got \"" + v + "\"");
}

}  // namespace config_schema

using namespace config_schema;

std::vector<std::string> Config::keys() {
  Config c;
  std::vector<std::string> k;
  for (const Field& f : schema(c)) k.push_back(f.key);
  return k;
}

std::string Config::keys_doc() {
  Config c;
  std::ostringstream os;
  os << "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const Field& f : schema(c)) {
    std::string type;
    switch (f.kind) {
      case Kind::Int: type = "integer"; break;
      case Kind::Int64: type = "integer (64-bit)"; break;
      case Kind::Double: type = "number"; break;
      case Kind::Bool: type = "true / false"; break;
      case Kind::String: type = "string"; break;
    }
    if (!f.choices.empty()) {
      type.clear();
      for (const std::string& n : f.choices) type += (type.empty() ? "" : " / ") + ("`" + n + "`");
    }
    std::string def = format(f);
    if (def == "\"\"") def = "(empty)";
    os << "| `" << f.key << "` | " << type << " | `" << def << "` | " << f.doc << " |\n";
  }
  return os.str();
}

}  // namespace gt
