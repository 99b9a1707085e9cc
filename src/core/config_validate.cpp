// Config::validate (the ranges and rules that need no world size, then the typed view) and
// Config::check_interleaving.
#include <cmath>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/config_schema.hpp"
#include "src/core/error.hpp"
#include "src/core/features.hpp"

namespace gt {
using namespace config_schema;

namespace {
void positive(const char* key, double v) {
  if (!(v > 0)) throw Error(std::string("config key '") + key + "' must be positive, got " + std::to_string(v));
}
void nonneg(const char* key, double v) {
  if (v < 0) throw Error(std::string("config key '") + key + "' must be >= 0, got " + std::to_string(v));
}

// The model's, the training loop's and the layout's own ranges (validate() goes on with the rest).
// Epoch-based runs and the step decay (src/train/optim/lr_schedule.hpp resolves them against the dataset).
void validate_epochs(const TrainConfig& t) {
  nonneg("train.epochs", t.epochs);
  nonneg("train.warmup_epochs", t.warmup_epochs);
  if (t.warmup_epochs > 0 && t.warmup_steps > 0)
    throw Error("config keys 'train.warmup_epochs' and 'train.warmup_steps' both set: give the warm-up one way");
  if (t.warmup_epochs > 0 && t.epochs <= 0)
    throw Error("config key 'train.warmup_epochs' needs train.epochs > 0 (the run's length in epochs)");
  if (!(t.lr_decay_factor > 0 && t.lr_decay_factor <= 1))
    throw Error("config key 'train.lr_decay_factor' must be in (0, 1]");
  const std::vector<double> m = t.lr_milestone_points();
  for (size_t i = 1; i < m.size(); ++i)
    if (!(m[i] > m[i - 1])) throw Error("config key 'train.lr_milestones' must be ascending, got \"" + t.lr_milestones + "\"");
  if (t.lr_decay == "step" && m.empty())
    throw Error("config key 'train.lr_decay' = step needs train.lr_milestones (where to multiply by lr_decay_factor)");
}

void validate_model_train_parallel(const Config& c) {
  positive("model.n_layer", c.model.n_layer);
  positive("model.d_model", c.model.d_model);
  positive("model.n_head", c.model.n_head);
  positive("model.seq_len", c.model.seq_len);
  positive("model.vocab_size", c.model.vocab_size);
  positive("model.init_std", c.model.init_std);
  nonneg("model.n_kv_head", c.model.n_kv_head);
  nonneg("model.ffn_hidden", c.model.ffn_hidden);
  positive("model.rope_theta", c.model.rope_theta);
  positive("model.norm_eps", c.model.norm_eps);
  positive("model.image_size", c.model.image_size);
  positive("model.image_channels", c.model.image_channels);
  if (c.model.classes < 2) throw Error("config key 'model.classes' must be at least 2, got " + std::to_string(c.model.classes));
  if (!(c.train.momentum >= 0 && c.train.momentum < 1)) throw Error("config key 'train.momentum' must be in [0, 1)");
  if (!(c.train.lars_eta > 0)) throw Error("config key 'train.lars_eta' must be > 0");
  positive("train.lr_reference_batch", c.train.lr_reference_batch);
  validate_epochs(c.train);
  if (c.model.d_model % c.model.n_head != 0)
    throw Error("config: model.d_model (" + std::to_string(c.model.d_model) + ") is not divisible by model.n_head (" +
                std::to_string(c.model.n_head) + ")");
  positive("train.steps", c.train.steps);
  positive("train.micro_batch_size", c.train.micro_batch_size);
  positive("train.micro_batches", c.train.micro_batches);
  positive("train.lr", c.train.lr);
  nonneg("train.min_lr", c.train.min_lr);
  nonneg("train.warmup_steps", c.train.warmup_steps);
  nonneg("train.decay_steps", c.train.decay_steps);
  nonneg("train.weight_decay", c.train.weight_decay);
  if (!(c.train.beta1 >= 0 && c.train.beta1 < 1)) throw Error("config key 'train.beta1' must be in [0, 1)");
  if (!(c.train.beta2 >= 0 && c.train.beta2 < 1)) throw Error("config key 'train.beta2' must be in [0, 1)");
  positive("train.eps", c.train.eps);
  nonneg("train.grad_clip", c.train.grad_clip);
  nonneg("train.max_steps_per_run", c.train.max_steps_per_run);
  positive("train.nonfinite_max_consecutive", c.train.nonfinite_max_consecutive);
  nonneg("train.loss_bound", c.train.loss_bound);
  nonneg("train.gnorm_bound", c.train.gnorm_bound);
  nonneg("train.spike_zscore", c.train.spike_zscore);
  positive("train.spike_window", c.train.spike_window);
  nonneg("train.watchdog_s", c.train.watchdog_s);
  positive("parallel.tp", c.parallel.tp);
  positive("parallel.pp", c.parallel.pp);
  nonneg("parallel.dp", c.parallel.dp);
  positive("parallel.bucket_mb", c.parallel.bucket_mb);
  nonneg("parallel.wte_chunk_rows", c.parallel.wte_chunk_rows);
  positive("parallel.blas_threads", c.parallel.blas_threads);
  if (!c.parallel.cluster.empty() && c.parallel.layout != "auto")
    throw Error("config key 'parallel.cluster' is read only with parallel.layout = \"auto\"");
  positive("parallel.virtual_stages", c.parallel.virtual_stages);
  if (c.parallel.layout != "auto") c.check_interleaving(c.parallel.pp);  // auto: the trainer checks the chosen pp
  positive("parallel.rebalance_after", c.parallel.rebalance_after);
  positive("parallel.adapt_interval", c.parallel.adapt_interval);
  nonneg("parallel.rebalance_gain", c.parallel.rebalance_gain);
  if (!(c.parallel.straggler_ratio > 1) || !std::isfinite(c.parallel.straggler_ratio))
    throw Error("config key 'parallel.straggler_ratio' must be a finite number > 1 (a rank's compute over its peers')");
  if (!c.parallel.stage_blocks.empty()) {
    const std::vector<int> blocks = c.parallel.stage_block_counts();  // throws on a bad list
    int sum = 0;
    for (int b : blocks) sum += b;
    if (sum != c.model.n_layer)
      throw Error("config key 'parallel.stage_blocks' = \"" + c.parallel.stage_blocks + "\" adds up to " +
                  std::to_string(sum) + " blocks, the model has model.n_layer = " + std::to_string(c.model.n_layer));
  }
}

// parallel.dp_shares: the list's shape (count, each share, sum); what uneven shares cannot run with is in the
// compatibility table (features.hpp).
void validate_dp_shares(const Config& c) {
  const ParallelConfig& p = c.parallel;
  if (p.dp_shares.empty()) return;
  const std::string key = "config key 'parallel.dp_shares' = \"" + p.dp_shares + "\"";
  if (p.layout == "auto" || p.dp < 1)
    throw Error(key + " needs parallel.dp set (and parallel.layout = \"manual\"): one share per DP replica");
  const std::vector<int> shares = p.dp_share_counts();  // throws on a malformed list or a share < 1
  if (int(shares.size()) != p.dp)
    throw Error(key + " has " + std::to_string(shares.size()) + " entries, parallel.dp = " + std::to_string(p.dp));
  long long sum = 0;
  for (int s : shares) sum += s;
  const long long global = (long long)p.dp * c.train.micro_batches;
  if (sum != global)
    throw Error(key + " adds up to " + std::to_string(sum) + " micro-batches, the global batch has parallel.dp x " +
                "train.micro_batches = " + std::to_string(global));
  // what uneven shares cannot run with: the compatibility table (features.hpp)
}
}  // namespace

ConfigChoices Config::validate() const {
  validate_model_train_parallel(*this);
  validate_dp_shares(*this);
  Config copy = *this;
  for (const Field& f : schema(copy)) check_choice(f, "");
  positive("train.loss_scale_initial", train.loss_scale_initial);
  positive("train.loss_scale_min", train.loss_scale_min);
  if (train.loss_scale_min > train.loss_scale_initial)
    throw Error("config: train.loss_scale_min (" + std::to_string(train.loss_scale_min) +
                ") is above train.loss_scale_initial (" + std::to_string(train.loss_scale_initial) + ")");
  if (!(train.loss_scale_growth > 1)) throw Error("config key 'train.loss_scale_growth' must be > 1");
  if (!(train.loss_scale_backoff > 0 && train.loss_scale_backoff < 1))
    throw Error("config key 'train.loss_scale_backoff' must be in (0, 1)");
  positive("train.loss_scale_window", train.loss_scale_window);
  positive("train.loss_scale_hysteresis", train.loss_scale_hysteresis);
  if (parallel.zero < 0 || parallel.zero > 3)
    throw Error("config key 'parallel.zero' must be 0, 1, 2 or 3, got " + std::to_string(parallel.zero));
  if (data.source == "hdf5" && data.path.empty()) throw Error("config: data.source = \"hdf5\" needs data.path");
  if (!(data.synthetic_noise >= 0 && data.synthetic_noise <= 1))
    throw Error("config key 'data.synthetic_noise' must be in [0, 1]");
  nonneg("data.val_every", data.val_every);
  positive("data.val_batches", data.val_batches);
  nonneg("data.prefetch", data.prefetch);
  nonneg("checkpoint.every", checkpoint.every);
  positive("checkpoint.keep", checkpoint.keep);
  positive("output.log_every", output.log_every);
  nonneg("output.peak_gflops", output.peak_gflops);
  if (output.dir.empty()) throw Error("config key 'output.dir' must not be empty");
  if (!(compress.density > 0 && compress.density <= 1))
    throw Error("config key 'compress.density' must be in (0, 1], got " + std::to_string(compress.density));
  nonneg("compress.warmup_steps", compress.warmup_steps);
  nonneg("compress.local_clip", compress.local_clip);
  if (compress.values != "fp32" && compress.method != "topk")
    throw Error("config key 'compress.values' = \"" + compress.values + "\" applies to compress.method = \"topk\" only "
                "(the dense 16-bit all-reduce is compress.method = bf16 | fp16)");
  nonneg("sparsity.asp_step", sparsity.asp_step);
  nonneg("sparsity.srste_decay", sparsity.srste_decay);
  // 2:4 groups run along each linear layer's input dimension, which TP splits for attn.proj and mlp.proj:
  // every TP rank must hold whole groups (its d_model/tp input columns a multiple of 4).
  if (sparsity.pattern == "2:4" && !model.resnet_kind() && model.d_model % (4 * parallel.tp) != 0)
    throw Error("config key 'sparsity.pattern' = \"2:4\" needs model.d_model (" + std::to_string(model.d_model) +
                ") divisible by 4 x parallel.tp (" + std::to_string(4 * parallel.tp) +
                ") so that every TP rank holds whole groups of 4 input columns");
  FeatureSet(*this).check();  // the pairs of features that cannot run together: one table
  return choices();
}

void Config::check_interleaving(int pp) const {
  const int v = parallel.virtual_stages;
  const std::string vs = "parallel.virtual_stages = " + std::to_string(v);
  if (parallel.schedule != "interleaved") {
    if (v != 1) throw Error("config: " + vs + " needs parallel.schedule = \"interleaved\" (got \"" + parallel.schedule + "\")");
    return;
  }
  if (pp < 2)
    throw Error("config: parallel.schedule = \"interleaved\" needs parallel.pp >= 2, got " + std::to_string(pp) +
                " (it interleaves the model chunks of several stages)");
  if (model.n_layer % (pp * v) != 0)
    throw Error("config: " + vs + " with parallel.pp = " + std::to_string(pp) + ": model.n_layer (" +
                std::to_string(model.n_layer) + ") is not divisible by pp x virtual_stages (" + std::to_string(pp * v) +
                "); the interleaved schedule gives every chunk as many layers");
  if (train.micro_batches % pp != 0)
    throw Error("config: parallel.schedule = \"interleaved\" needs train.micro_batches (" +
                std::to_string(train.micro_batches) + ") a multiple of parallel.pp (" + std::to_string(pp) +
                "), as Megatron's interleaved schedule does");
}

}  // namespace gt
