// 2:4 structured sparsity (issue 11, src/train/extensions/sparsity.hpp), on the ranks given (1: tp=1; 2: tp=2):
//  - mask_2of4 against a naive reference (sort each group of 4 by |w| descending, index ascending; keep 2) on
//    data full of ties, signed zeros and a NaN;
//  - SR-STE: after every step every group of 4 of the working weights has at least 2 zeros, the mask is the
//    naive reference's mask of the gathered global masters (so at tp=2 each rank's slice held whole groups of
//    the unsplit tensor), the working weights are the masters where the mask is 1, and the masters stay dense;
//  - ASP: dense until asp_step, then the same invariants with the mask fixed and pruned masters at zero;
//  - the masked forward equals the dense product of the masked weights: a dense run whose weights are set to
//    the sparse run's initial working weights has bit for bit the sparse run's first loss and gradient norm
//    (straight-through: the dense masters receive the masked weights' gradient unchanged);
//  - masks survive a checkpoint: stopped at step 3 and resumed, both recipes continue bit for bit (ASP's mask is
//    fixed after pruning, so a resume without it diverges);
//  - a d_model that would split groups across TP ranks is a one-line config error naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>

#include "src/train/host_mirror.hpp"
#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"

namespace {
using Tensors = std::map<std::string, std::vector<float>>;

Tensors as_map(std::vector<std::pair<std::string, std::vector<float>>> v) {
  Tensors m;
  for (auto& [k, x] : v) m[k] = std::move(x);
  return m;
}

// The reference: the 2 largest |w| of each group of 4 (NaN largest, ties to the lower index).
std::vector<float> naive_mask(const std::vector<float>& w) {
  std::vector<float> m(w.size(), 0.0f);
  for (size_t g = 0; g + 4 <= w.size(); g += 4) {
    int idx[4] = {0, 1, 2, 3};
    auto key = [&](int j) { return std::isnan(w[g + j]) ? INFINITY : std::fabs(w[g + j]); };
    std::stable_sort(idx, idx + 4, [&](int a, int b) { return key(a) > key(b); });
    m[g + idx[0]] = m[g + idx[1]] = 1.0f;
  }
  return m;
}

// The linear layers' weights of a GPT-2 block (the test's own list, independent of the model's flags).
bool is_sparse(const std::string& name) {
  for (const std::string t : {".attn.qkv.w", ".attn.proj.w", ".mlp.fc.w", ".mlp.proj.w"})
    if (name.size() > t.size() && name.compare(name.size() - t.size(), t.size(), t) == 0) return true;
  return false;
}

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

gt::Config base_config(const std::string& dir) {
  gt::Config c = gt_test::tiny_config(dir);
  c.parallel.tp = world_size();  // 1 or 2: the TP split of the masked weights
  c.train.steps = 6;
  c.sparsity.pattern = "2:4";
  return c;
}

bool all_ok() {
  int ok = !::testing::Test::HasFailure(), all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

// The invariants of one step, on the gathered global tensors. `fixed`: the mask every step must equal (ASP).
void check_step(gt::Trainer& t, int step, bool expect_sparse, const Tensors* fixed = nullptr) {
  const Tensors p = as_map(t.gather(gt::Buffer::Params)), w = as_map(t.gather_params()), m = as_map(t.gather(gt::Buffer::SparseMask));
  size_t dense_groups = 0;  // groups of the masters with fewer than 2 zeros
  for (const auto& [name, pv] : p) {
    const std::vector<float>& wv = w.at(name);
    if (!is_sparse(name)) {
      EXPECT_EQ(pv, wv) << name << ": an unmasked tensor's working copy differs from its master at step " << step;
      continue;
    }
    const std::vector<float>& mv = m.at(name);
    if (!expect_sparse) {
      EXPECT_EQ(pv, wv) << name << " is not dense before pruning at step " << step;
      EXPECT_TRUE(std::all_of(mv.begin(), mv.end(), [](float x) { return x == 1.0f; })) << name;
      continue;
    }
    if (fixed) {
      EXPECT_EQ(mv, fixed->at(name)) << name << ": ASP's mask moved at step " << step;
    } else {
      EXPECT_EQ(mv, naive_mask(wv)) << name << ": not the 2:4 magnitude mask of the masters at step " << step;
    }
    for (size_t g = 0; g < pv.size(); g += 4) {
      int zeros = 0, wzeros = 0;
      for (int j = 0; j < 4; ++j) {
        zeros += pv[g + j] == 0.0f;
        wzeros += wv[g + j] == 0.0f;
        const float want = mv[g + j] != 0.0f ? wv[g + j] : 0.0f;
        if (pv[g + j] != want) ADD_FAILURE() << name << "[" << g + j << "] is not master * mask at step " << step;
      }
      if (zeros < 2) ADD_FAILURE() << name << " group " << g / 4 << " has " << zeros << " zeros at step " << step;
      dense_groups += wzeros < 2;
    }
  }
  if (expect_sparse && !fixed) {
    EXPECT_GT(dense_groups, 0u) << "SR-STE's masters should stay dense";
  }
  if (fixed) {
    EXPECT_EQ(dense_groups, 0u) << "ASP's pruned masters should stay zero";
  }
}

struct Result {
  std::vector<double> losses;
  Tensors masters, masks;
};

Result run(const gt::Config& c, int expect_rc = 0) {
  gt::Grid grid(MPI_COMM_WORLD, c.parallel.tp, c.parallel.pp, c.parallel.dp, gt::parse_allreduce_algo("mpi"));
  gt::Trainer t(c, grid, c.to_toml());
  EXPECT_EQ(t.run(), expect_rc);
  Result r;
  for (const auto& s : t.history()) r.losses.push_back(s.loss);
  r.masters = as_map(t.gather_params());
  r.masks = as_map(t.gather(gt::Buffer::SparseMask));
  return r;
}
}  // namespace

TEST(Sparsity, MaskMatchesNaiveReference) {
  // Values from a small set, so most groups hold ties; signed zeros; one NaN.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> w(4 * 1001);
  for (float& x : w) x = float(pick(rng)) * 0.5f;
  w[5] = -0.0f;
  w[17] = std::nanf("");
  gt::DeviceView<float> dw("w", w.size()), dm("m", w.size());
  auto hw = Kokkos::create_mirror_view(dw);
  std::copy(w.begin(), w.end(), hw.data());
  Kokkos::deep_copy(dw, hw);
  gt::mask_2of4(dw.data(), dm.data(), long(w.size()));
  auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dm);
  EXPECT_EQ(std::vector<float>(hm.data(), hm.data() + w.size()), naive_mask(w));
}

TEST(Sparsity, SrsteInvariantsEveryStep) {
  gt::Config c = base_config(gt_test::fresh_dir(MPI_COMM_WORLD, "srste"));
  gt::Grid grid(MPI_COMM_WORLD, c.parallel.tp, 1, 1, gt::parse_allreduce_algo("mpi"));
  gt::Trainer t(c, grid, c.to_toml());
  check_step(t, 0, true);
  t.after_step = [&](int step) { check_step(t, step, true); };
  EXPECT_EQ(t.run(), 0);
  ASSERT_TRUE(all_ok());
}

TEST(Sparsity, AspDenseThenFixedMask) {
  gt::Config c = base_config(gt_test::fresh_dir(MPI_COMM_WORLD, "asp"));
  c.sparsity.recipe = "asp";
  c.sparsity.asp_step = 2;
  gt::Grid grid(MPI_COMM_WORLD, c.parallel.tp, 1, 1, gt::parse_allreduce_algo("mpi"));
  gt::Trainer t(c, grid, c.to_toml());
  Tensors fixed;
  t.after_step = [&](int step) {
    if (step < c.sparsity.asp_step) return check_step(t, step, false);
    if (step == c.sparsity.asp_step) {
      fixed = as_map(t.gather(gt::Buffer::SparseMask));
      for (auto& [name, m] : fixed)
        if (is_sparse(name)) {
          EXPECT_EQ(m, naive_mask(as_map(t.gather(gt::Buffer::Params)).at(name))) << name;
        }
    }
    check_step(t, step, true, &fixed);
  };
  EXPECT_EQ(t.run(), 0);
  ASSERT_TRUE(all_ok());
}

TEST(Sparsity, MaskedForwardEqualsDenseProductOfMaskedWeights) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "fwd");
  gt::Config c = base_config(dir + "/sparse");
  c.train.steps = 1;
  c.sparsity.srste_decay = 0;  // the plain straight-through gradient, to compare the norms too
  gt::Config d = c;
  d.sparsity.pattern = "none";
  d.output.dir = dir + "/dense";
  gt::Grid grid(MPI_COMM_WORLD, c.parallel.tp, 1, 1, gt::parse_allreduce_algo("mpi"));
  gt::Trainer sparse(c, grid, c.to_toml());
  gt::Trainer dense(d, grid, d.to_toml());
  // The dense run's weights := the sparse run's masters times the reference mask of each masked tensor (this
  // rank's slice holds whole rows of groups: the last dimension is local and a multiple of 4).
  gt::TrainState& from = sparse.state();
  gt::TrainState& to = dense.state();
  ASSERT_EQ(from.layout().size(), to.layout().size());
  // through host mirrors: the state lives in device memory on a GPU build
  gt::HostMirror<float> src(from.master(), from.layout().size()), dst(to.data<float>(gt::Buffer::Params), to.layout().size());
  src.pull();
  dst.pull();
  for (const gt::TensorSpec& s : from.layout().tensors()) {
    std::vector<float> w(src.data() + s.offset, src.data() + s.offset + s.size);
    if (gt::sparse_tensor(s)) {
      const std::vector<float> m = naive_mask(w);
      for (size_t i = 0; i < w.size(); ++i) w[i] = m[i] != 0.0f ? w[i] : 0.0f;
    }
    std::copy(w.begin(), w.end(), dst.data() + s.offset);
  }
  dst.push();
  EXPECT_EQ(sparse.run(), 0);
  EXPECT_EQ(dense.run(), 0);
  ASSERT_EQ(sparse.history().size(), 1u);
  EXPECT_EQ(sparse.history()[0].loss, dense.history()[0].loss);
  EXPECT_EQ(sparse.history()[0].grad_norm, dense.history()[0].grad_norm);
  ASSERT_TRUE(all_ok());
}

TEST(Sparsity, MasksSurviveCheckpointBitwise) {
  for (const char* recipe : {"srste", "asp"}) {
    const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, std::string("ck_") + recipe);
    gt::Config c = base_config(dir + "/whole");
    c.sparsity.recipe = recipe;
    c.sparsity.asp_step = 2;  // pruned before the checkpoint at step 3
    const Result whole = run(c);
    gt::Config first = c;
    first.output.dir = dir + "/first";
    first.checkpoint.dir = dir + "/checkpoints";
    first.train.max_steps_per_run = 3;
    run(first, gt::kExitPreempted);
    gt::Config again = first;
    again.output.dir = dir + "/again";
    again.train.max_steps_per_run = 0;
    again.checkpoint.resume = "auto";
    const Result rest = run(again);
    EXPECT_EQ(rest.losses, std::vector<double>(whole.losses.begin() + 3, whole.losses.end())) << recipe;
    EXPECT_EQ(rest.masters, whole.masters) << recipe;
    EXPECT_EQ(rest.masks, whole.masks) << recipe;
    ASSERT_TRUE(all_ok());
  }
}

TEST(Sparsity, GroupsSplitAcrossTpRanksAreRefused) {
  gt::Config c = gt_test::tiny_config("/nonexistent");
  c.sparsity.pattern = "2:4";
  c.model.d_model = 24;  // 4 heads of 6; tp=4 leaves 6 input columns per rank
  c.parallel.tp = 4;
  try {
    c.validate();
    ADD_FAILURE() << "d_model 24 at tp=4 was accepted";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sparsity.pattern"), std::string::npos) << e.what();
  }
  c.parallel.tp = 2;  // 12 columns per rank: whole groups
  EXPECT_NO_THROW(c.validate());
}
