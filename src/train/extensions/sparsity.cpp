#include "src/train/extensions/sparsity.hpp"

#include <string>

#include "src/core/error.hpp"
#include "src/train/kv_replicas.hpp"

namespace gt {

bool sparse_tensor(const TensorSpec& s) { return s.sparse24; }

void mask_2of4(const float* w, float* mask, long n) {
  Kokkos::parallel_for("mask_2of4", range(0, n / 4), KOKKOS_LAMBDA(long g) {
    float a[4];
    for (int j = 0; j < 4; ++j) {
      const float x = math::fabs(w[4 * g + j]);
      a[j] = x == x ? x : HUGE_VALF;  // NaN ranks as largest: kept, so the step's non-finite check still sees it
    }
    for (int j = 0; j < 4; ++j) {
      int above = 0;  // entries that rank before j: larger, or equal and at a lower index
      for (int k = 0; k < 4; ++k) above += (a[k] > a[j] || (a[k] == a[j] && k < j)) ? 1 : 0;
      mask[4 * g + j] = above < 2 ? 1.0f : 0.0f;
    }
  });
}

Sparsity::Sparsity(const SparsityConfig& cfg, SparsityRecipe recipe, TrainState& state, const ModelFamily* family)
    : cfg_(cfg), recipe_(recipe), state_(state) {
  if (family) {
    for (const TensorSpec& s : family->global_specs())
      if (sparse_tensor(s)) sparse_params_ += s.global_size();
    flops_per_position_ = family->train_flops_per_position();
  }
  if (state_.working() != Precision::FP32)
    throw Error("sparsity.pattern = \"2:4\": only fp32 working parameters are implemented");
  for (const TensorSpec& s : state_.layout().tensors())
    if (sparse_tensor(s) && s.local_shape().back() % 4 != 0)
      throw Error("sparsity.pattern = \"2:4\": tensor " + s.name + " has " + std::to_string(s.local_shape().back()) +
                  " input columns on this rank, not whole groups of 4");
  const long n = long(state_.layout().size());
  // The dense masters the optimizer updates; Params becomes their masked working copy.
  if (!state_.has_buffer(Buffer::Master)) {
    state_.add_buffer(Buffer::Master, DType::F32);
    Kokkos::deep_copy(DeviceView<float>(state_.master(), n), DeviceView<float>(state_.data<float>(Buffer::Params), n));
  }
  state_.add_buffer(Buffer::SparseMask, DType::F32);
  Kokkos::deep_copy(DeviceView<float>(state_.data<float>(Buffer::SparseMask), n), 1.0f);
  if (recipe_ == SparsityRecipe::SRSTE || cfg_.asp_step == 0) compute_masks();
  if (pruned(0)) prune_masters();
  write_working();
}

void Sparsity::compute_masks() {
  const float* w = state_.master();
  float* m = state_.data<float>(Buffer::SparseMask);
  for (const TensorSpec& s : state_.layout().tensors())
    if (sparse_tensor(s)) mask_2of4(w + s.offset, m + s.offset, long(s.size));
}

namespace {
// w[i] = 0 where m[i] == 0 (n elements). A free function: nvcc refuses an extended (device) lambda whose
// enclosing function is a private member (Sparsity::prune_masters).
void zero_where_masked(float* w, const float* m, long n) {
  Kokkos::parallel_for("sparsity_prune", range(0, n), KOKKOS_LAMBDA(long i) {
    if (m[i] == 0.0f) w[i] = 0.0f;
  });
}
}  // namespace

void Sparsity::prune_masters() {
  zero_where_masked(state_.master(), state_.data<float>(Buffer::SparseMask), long(state_.layout().size()));
}

void Sparsity::before_update(int updates_done, double loss_scale) {
  float* g = state_.grads();
  const float* w = state_.master();
  const float* m = state_.data<float>(Buffer::SparseMask);
  const long n = long(state_.layout().size());
  if (recipe_ == SparsityRecipe::SRSTE) {
    // The stored gradients carry the loss scale, which the optimizer divides out again.
    const float lam = float(cfg_.srste_decay * loss_scale);
    if (lam == 0.0f) return;
    Kokkos::parallel_for("srste_decay", range(0, n), KOKKOS_LAMBDA(long i) {
      if (m[i] == 0.0f) g[i] += lam * w[i];
    });
  } else if (pruned(updates_done)) {
    Kokkos::parallel_for("asp_mask_grads", range(0, n), KOKKOS_LAMBDA(long i) {
      if (m[i] == 0.0f) g[i] = 0.0f;
    });
  }
}

void Sparsity::after_update(int updates) {
  if (recipe_ == SparsityRecipe::SRSTE || updates == cfg_.asp_step) compute_masks();
  // AdamW's momentum and weight decay still move pruned masters after their gradients went to zero.
  if (pruned(updates)) prune_masters();
  write_working();
}

std::vector<TensorShard> Sparsity::datasets(ExtensionIo& io) {
  std::vector<TensorShard> out;
  float* masks = io.host(Buffer::SparseMask);  // the whole layout: the masks are never sharded
  for (const TensorSpec& s : state_.layout().tensors()) {
    if (!sparse_tensor(s)) continue;
    TensorShard t;
    t.name = disk_path(Buffer::SparseMask, s.name);
    t.global_shape = s.global_shape;
    t.start = s.local_start();
    t.count = checkpoint_count(s);
    t.data = masks + s.offset;
    t.writer = io.grid.dp_rank() == 0 && owner(s, io.grid);
    out.push_back(std::move(t));
  }
  return out;
}

void Sparsity::report(JsonObject& summary) const {
  summary.str("sparsity", cfg_.pattern + " " + cfg_.recipe);
  if (flops_per_position_ <= 0) return;
  // The FLOP ledger of 2:4 (docs/sparsity.md): of the masked weights' products only the forward one
  // (X W^T, groups along its reduction dimension) can skip the pruned half on sparse tensor cores; the
  // input gradient (dY W) reduces along the other dimension and the weight gradient has no sparse operand.
  const double skipped = double(sparse_params_);  // 2 N_masked forward FLOPs per position, half of them skipped
  summary.num("sparse_flops_skipped_per_token", skipped)
      .num("sparse_skipped_flop_fraction", skipped / flops_per_position_);
}

void Sparsity::after_load(ExtensionIo& io) { copy_kv_from_last_replica(state_, {Buffer::SparseMask}, io.grid.tp()); }

void Sparsity::write_working() {
  const float* w = state_.master();
  const float* m = state_.data<float>(Buffer::SparseMask);
  float* p = state_.data<float>(Buffer::Params);
  // A select, not w * m: an inf master that is pruned gives 0, not NaN.
  Kokkos::parallel_for("sparsity_working", range(0, long(state_.layout().size())), KOKKOS_LAMBDA(long i) {
    p[i] = m[i] != 0.0f ? w[i] : 0.0f;
  });
  Kokkos::fence();
}

}  // namespace gt
