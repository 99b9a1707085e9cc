// ZeRO stages against zero=0 on the same layout (tp pp dp micro_batches zero allreduce, from the command line):
//  - five steps with clipping active (train.grad_clip = 0.05, below every step's norm): losses and the reported
//    global gradient norms within 1e-5 relative of zero=0, parameters within test_layouts' tolerance. A norm
//    computed on a shard alone is about 1/sqrt(dp) of the global one and fails the norm check at once.
//  - bitwise equality where the reduction order is the same by construction (clipping off, so the norm's own
//    summation order does not enter): zero=1 always (the same all-reduce, an elementwise update, a gather that
//    moves bits); zero=2 with dp=2 and pp=1 (a reduce-scatter and an all-reduce of two operands both compute the
//    one sum a + b; with dp > 2 the library may associate differently, and with pp > 1 the tied wte is summed
//    over the embedding group before the DP group instead of after). zero=3 likewise (its gradients take stage
//    2's path; the parameters it computes with are all-gathered bit copies of the shards).
//  - an optional 7th argument, the precision (bf16): the same comparisons against zero=0 in bf16. The bitwise
//    cases stay bitwise (the working copy is rounded from the same fp32 master shard by shard, the gather moves
//    bits); the clipped comparisons widen to 1e-2 relative (bf16 rounds to 2^-8 = 3.9e-3: a master that
//    differs in its last fp32 bit can round its working copy to the other bf16 neighbour).
//  - zero=2 and 3 with one micro-batch and pp=1 hold no full gradient buffer (the TrainState's allocations) and
//    no buffer for all of the tied wte's gradient: wte goes in chunks of rows (parallel.wte_chunk_rows = 24,
//    three chunks, within the tolerance; the default, one chunk for tiny, in the bitwise runs). With the shm
//    all-reduce their reduce-scatters sum in rank order, zero 0's order: bitwise at any dp (src/comm/node_shm.hpp).
//  - an optional 8th argument, the model's arch (llama, after the precision): the same with Llama blocks, whose
//    untied wte is staged as an ordinary unit (no buffer for it through the whole backward) and whose lm_head is
//    part of the head's unit.
//  - checkpoints: a run stopped at step 3 and resumed on the same layout continues bitwise; resumed at zero=0 on
//    one rank (world rank 0 alone, the same global batch) it continues within 1e-5 relative.
// The 5th argument may list several stages ("1,3"): the zero=0 references of the layout (clipped, and unclipped
// where some stage is bitwise) then run once for all of them (issue 20: the suite's time), and each stage is
// checked against them exactly as it was alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"

namespace {
constexpr int kGlobalBatch = 16;

struct Result : gt_test::RunRecord {  // losses, grad_norms, params (no gradients)
  bool full_grads = false;  // whether the TrainState held the full gradient buffer
  bool shm = false;         // whether ZeRO ran its reduce-scatters and gathers through shared memory
  size_t tied_staging = 0;  // bytes of the staging buffer for all of wte's gradient (none when wte is chunked)
};

Result run(MPI_Comm comm, const gt::Config& c) {
  Result r;
  gt_test::RunRecord& record = r;
  record = gt_test::run_and_record(comm, c, 0, false, [&](gt::Trainer& t) {
    r.full_grads = t.state().has_buffer(gt::Buffer::Grads);
    r.shm = t.zero_in_shared_memory();
    r.tied_staging = t.state().has_buffer(gt::Buffer::GradsTied) ? t.state().buffer(gt::Buffer::GradsTied).bytes : 0;
  });
  return r;
}

double g_rel = 1e-5;  // 1e-5 in fp32, 1e-2 in bf16 (see the header)

void expect_close(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], g_rel * std::fabs(b[i])) << what << " of step " << i + 1;
}

// test_layouts' tolerance (gt_test::expect_params_close), g_rel where that is wider (bf16).
void expect_params_close(const Result& a, const Result& b, const gt::Config& c) {
  gt_test::expect_params_close(a.params, b.params, c, std::max(1e-3, g_rel));
}

void expect_params_equal(const Result& a, const Result& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t k = 0; k < a.params.size(); ++k) EXPECT_EQ(a.params[k].second, b.params[k].second) << a.params[k].first;
}

bool all_ok() {
  int ok = !::testing::Test::HasFailure(), all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}
// The zero=0 references of one layout: clipped (r0), and unclipped (s0, run only when some stage is bitwise).
struct References {
  gt::Config c;  // the layout's config, clipping on
  Result r0, s0;
};

bool staged_path(const gt::Config& c, int zero) {
  return zero >= 2 && c.train.micro_batches == 1 && c.parallel.pp == 1;
}
// Bitwise where the reduction order is the same by construction. Stage 3 reduces gradients as stage 2 does and
// computes with gathered parameters, bit copies of the shards. Through shared memory (staged) every element is
// summed in rank order 0..dp-1, the shm all-reduce's order at zero 0: bitwise at any dp.
bool bitwise_case(const gt::Config& c, int zero) {
  const bool shm_reduce = c.parallel.allreduce == "shm" && staged_path(c, zero);
  return zero == 1 || (zero >= 2 && c.parallel.dp == 2 && c.parallel.pp == 1) || shm_reduce;
}

// Resume: stopped after step 3 on this layout (cz), continued here (bitwise against rz) and on one rank at zero=0.
void check_resume(const gt::Config& cz, const Result& rz, const std::string& dir) {
  gt::Config first = cz;
  first.output.dir = dir + "/ck";
  first.checkpoint.dir = dir + "/ck/checkpoints";
  first.train.max_steps_per_run = 3;
  {
    gt::Grid grid(MPI_COMM_WORLD, cz.parallel.tp, cz.parallel.pp, cz.parallel.dp,
                  gt::parse_allreduce_algo(first.parallel.allreduce));
    gt::Trainer t(first, grid, first.to_toml());
    EXPECT_EQ(t.run(), gt::kExitPreempted);
  }
  gt::Config again = first;
  again.train.max_steps_per_run = 0;
  again.checkpoint.resume = "auto";
  again.output.dir = dir + "/ck_same";
  const Result same = run(MPI_COMM_WORLD, again);
  const std::vector<double> tail(rz.losses.begin() + 3, rz.losses.end());
  EXPECT_EQ(same.losses, tail) << "resume on the same layout";
  expect_params_equal(same, rz);
  ASSERT_TRUE(all_ok());

  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    gt::Config one = again;
    one.parallel.tp = one.parallel.pp = one.parallel.dp = 1;
    one.parallel.zero = 0;
    one.parallel.allreduce = "mpi";
    one.train.micro_batches = 1;
    one.train.micro_batch_size = kGlobalBatch;
    one.output.dir = dir + "/ck_one";  // in bf16 too: the checkpoint holds the fp32 masters
    const Result r1 = run(MPI_COMM_SELF, one);
    expect_close(r1.losses, tail, "loss after resuming at zero=0 on one rank");
    expect_params_close(r1, rz, cz);
  }
  EXPECT_TRUE(all_ok());
}

// One stage against the references: clipped within tolerance, unclipped bitwise where it should be, and its
// checkpoints resumed (check_resume).
void check_stage(const References& ref, int zero, const std::string& dir) {
  SCOPED_TRACE("zero " + std::to_string(zero));
  const gt::Config& c = ref.c;
  // Clipping active: close to zero=0, the global norm above all.
  gt::Config cz = c;
  cz.output.dir = dir + "/zz";
  cz.parallel.zero = zero;
  // Staged gradients split the tied wte into chunks of rows (row-chunk units, src/model/units.hpp): 24 of tiny's 64 rows
  // (32 per TP rank at tp=2) make chunks of 24, 24, 16 (24, 8), a short last one included. The chunked GEMMs
  // sum in another order than zero 0's whole ones: within the tolerance here, bitwise below with one chunk.
  const bool staged = staged_path(c, zero);
  if (staged) cz.parallel.wte_chunk_rows = 24;
  const Result rz = run(MPI_COMM_WORLD, cz);
  expect_close(rz.losses, ref.r0.losses, "loss");
  expect_close(rz.grad_norms, ref.r0.grad_norms, "global gradient norm");
  expect_params_close(rz, ref.r0, c);
  // Stages 2 and 3 with one micro-batch and one pipeline stage stage each unit's gradients and reduce-scatter
  // them as the unit's backward ends (src/train/dp/zero_grads.hpp): the full fp32 buffer must not exist.
  EXPECT_EQ(rz.full_grads, !staged) << "the full gradient buffer at zero " << zero;
  EXPECT_EQ(rz.tied_staging, 0u) << "a buffer for all of wte's gradient";
  // On one node with the shm all-reduce (src/comm/node_shm.hpp): the all-gathers of stages 1 and 2 and the
  // staged reduce-scatters and stage 3's gathers through the shared region, no MPI collective.
  const bool on_shm = c.parallel.allreduce == "shm";
  EXPECT_EQ(rz.shm, on_shm && (zero == 1 || zero == 2 || staged)) << "ZeRO through shared memory";
  ASSERT_TRUE(all_ok());

  // Clipping off: bitwise where the reduction order is the same by construction (bitwise_case).
  if (bitwise_case(c, zero)) {
    gt::Config bz = cz;
    bz.train.grad_clip = 0.0;
    bz.parallel.wte_chunk_rows = 0;  // the default: one chunk for tiny's wte (smaller than a block)
    bz.output.dir = dir + "/bz";
    const Result sz = run(MPI_COMM_WORLD, bz);
    EXPECT_EQ(sz.losses, ref.s0.losses);
    expect_params_equal(sz, ref.s0);
    ASSERT_TRUE(all_ok());
  }
  check_resume(cz, rz, dir);
}

// "1,3" -> {1, 3}
std::vector<int> stage_list(const std::string& text) {
  std::vector<int> out;
  size_t p = 0;
  while (p <= text.size()) {
    const size_t end = std::min(text.find(',', p), text.size());
    out.push_back(std::atoi(text.substr(p, end - p).c_str()));
    p = end + 1;
  }
  return out;
}
}  // namespace

TEST(Zero, MatchesZeroStageZero) {
  ASSERT_TRUE(gt_test::argc >= 7 && gt_test::argc <= 9)
      << "usage: test_zero tp pp dp micro_batches zero[,zero...] allreduce [fp32|bf16 [gpt2|llama]]";
  const int tp = std::atoi(gt_test::argv[1]), pp = std::atoi(gt_test::argv[2]), dp = std::atoi(gt_test::argv[3]);
  const int mb = std::atoi(gt_test::argv[4]);
  const std::vector<int> stages = stage_list(gt_test::argv[5]);
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world, tp * pp * dp);
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "zero");
  References ref;
  gt::Config& c = ref.c;
  c = gt_test::tiny_config(dir);
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.allreduce = gt_test::argv[6];
  c.parallel.bucket_mb = 0.01;  // several buckets, each cutting shards at other places than the tensors do
  c.train.micro_batches = mb;
  c.train.micro_batch_size = kGlobalBatch / (mb * dp);
  c.train.grad_clip = 0.05;
  if (gt_test::argc >= 8 && std::string(gt_test::argv[7]) != "fp32") {
    c.train.precision = gt_test::argv[7];
    g_rel = 1e-2;
  }
  if (gt_test::argc == 9 && std::string(gt_test::argv[8]) == "llama") {
    c.model.arch = "llama";
    c.model.n_kv_head = 2;
    c.model.ffn_hidden = 88;
  }
  gt::Config c0 = c;
  c0.output.dir = dir + "/z0";
  ref.r0 = run(MPI_COMM_WORLD, c0);
  for (double n : ref.r0.grad_norms) ASSERT_GT(n, c.train.grad_clip) << "the test needs clipping active on every step";
  bool any_bitwise = false;
  for (int z : stages) any_bitwise = any_bitwise || bitwise_case(c, z);
  if (any_bitwise) {  // the unclipped reference, once for every bitwise stage
    gt::Config b0 = c0;
    b0.train.grad_clip = 0.0;
    b0.output.dir = dir + "/b0";
    ref.s0 = run(MPI_COMM_WORLD, b0);
  }
  for (int z : stages) check_stage(ref, z, dir + "/z" + std::to_string(z));
}
