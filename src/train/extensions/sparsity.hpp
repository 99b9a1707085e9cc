#pragma once
// 2:4 structured sparsity of the linear layers' weights (issue 11, docs/sparsity.md), kept at the TrainState
// level so that the model code is untouched: the optimizer updates dense fp32 masters (buffer Master), and
// after every update the working parameters the model computes with (Params) become master where the mask
// is 1 and 0 elsewhere. The mask is buffer SparseMask (fp32 0/1; 1 outside the masked tensors), saved in
// checkpoints in global shapes.
//   SR-STE: mask = the 2 largest |master| of every group of 4, recomputed after every update (and at the start);
//           the gradient of the masked weights reaches the dense masters unchanged (straight-through), plus the
//           decay lambda * (1 - mask) * master on the pruned ones.
//   ASP:    dense (mask all 1) for asp_step updates, then one magnitude prune; the mask stays fixed, and the
//           pruned gradients and masters stay zero.
// Groups: 4 consecutive elements of the last dimension, which is the input dimension of every weight here
// ([out, in], src/model/gpt.cpp). TP splits qkv and fc along the output dimension and attn.proj and mlp.proj
// along the input one; Config::validate makes every rank's input columns a multiple of 4, so the slices hold
// whole groups and the masks are those of the unsplit tensor.
#include "src/core/config.hpp"
#include "src/model/model_family.hpp"
#include "src/train/extensions/extension.hpp"
#include "src/train/train_state.hpp"

namespace gt {

// The tensors that carry masks: those the model family flags (TensorSpec::sparse24): GPT-2's attn.qkv.w, attn.proj.w,
// mlp.fc.w, mlp.proj.w, Llama's attention weights, a ResNet's convolutions whose input channels are whole groups of 4.
bool sparse_tensor(const TensorSpec& s);

// mask[i] = 1 for the 2 entries of largest |w| in each group of 4 consecutive entries, else 0 (n a multiple of 4;
// ties go to the lower index, NaN counts as largest). Device memory.
void mask_2of4(const float* w, float* mask, long n);

// A TrainExtension (extension.hpp): its buffer SparseMask, the masks of the masked tensors as checkpoint datasets,
// its FLOP ledger in summary.json.
class Sparsity : public TrainExtension {
 public:
  // Adds the Master and SparseMask buffers, computes the first masks (SR-STE, or ASP at asp_step 0) and
  // writes the working parameters. Throws when the state cannot carry masks (a working type other than fp32).
  // family: the global model whose FLOP ledger report() gives (none: report() gives the pattern only).
  Sparsity(const SparsityConfig& cfg, SparsityRecipe recipe, TrainState& state, const ModelFamily* family = nullptr);

  // Before the optimizer update number `updates_done + 1`, on the stored gradients (scaled by loss_scale):
  // SR-STE adds loss_scale * lambda * (1 - mask) * master; pruned ASP zeroes the masked gradients.
  void before_update(int updates_done, double loss_scale) override;
  // After update number `updates` (1-based): new masks (SR-STE; ASP when updates == asp_step), pruned ASP
  // masters zeroed, the working parameters rewritten.
  void after_update(int updates) override;
  // The working parameters from the masters and masks as they stand (after a checkpoint was loaded).
  void write_working();
  void on_resume() override { write_working(); }

  std::vector<Buffer> buffers() const override { return {Buffer::SparseMask}; }
  // The masks of the masked tensors only: ASP's fixed masks cannot be recomputed from the weights.
  std::vector<TensorShard> datasets(ExtensionIo& io) override;
  // A replicated key/value head's mask rows from the last replica, as the state's (kv_replicas.hpp).
  void after_load(ExtensionIo& io) override;
  // sparsity (pattern and recipe) and the FLOP ledger of 2:4 (sparse_flops_skipped_per_token,
  // sparse_skipped_flop_fraction)
  void report(JsonObject& summary) const override;

 private:
  void compute_masks();
  void prune_masters();
  bool pruned(int updates_done) const { return recipe_ == SparsityRecipe::ASP && updates_done >= cfg_.asp_step; }

  SparsityConfig cfg_;
  SparsityRecipe recipe_;  // sparsity.recipe, typed (Config::choices())
  TrainState& state_;
  int64_t sparse_params_ = 0;       // elements of the global model's masked weights
  double flops_per_position_ = 0;  // the global model's training FLOPs per position (0: no family given)
};

}  // namespace gt
