// Calibration round trip: summaries made by the planner's own model from a known "true" machine are fitted
// starting from a different description; the fit must give back the true constants. The synthetic summaries
// are exact model outputs printed with 17 digits, so the tolerance (1e-6 relative) only covers the solver.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/plan/calibrate.hpp"
#include "src/plan/step_time.hpp"

using namespace gt::plan;

namespace {

Cluster base_cluster() {
  Cluster c;
  c.name = "base";
  c.devices_per_node = 2;
  c.memory_gb = 12;
  c.peak_tflops_fp32 = c.peak_tflops_bf16 = c.peak_tflops_fp16 = 0.155;
  c.gemm_flops = {1e7, 1e10};
  c.gemm_efficiency = {0.5, 0.9};
  c.attention_efficiency = 0.36;  // ratio 0.4 to the large-GEMM efficiency
  c.memory_gbs = 25;
  c.memory_efficiency = 0.85;
  c.intra = {6, 10, 1};
  c.inter = {1.25, 50, 0.8};
  c.step_overhead_ms = 1;
  return c;
}

Cluster true_cluster() {
  Cluster c = base_cluster();
  c.gemm_flops = {1.0};
  c.gemm_efficiency = {0.6};
  c.attention_efficiency = 0.4 * 0.6;
  c.memory_efficiency = 0.5;
  c.intra = {3, 25, 1};
  c.step_overhead_ms = 4;
  return c;
}

std::string write_run(const std::string& root, int id, const gt::ModelConfig& mc, const Layout& l, const Cluster& truth) {
  const std::string dir = root + "/run" + std::to_string(id);
  ::mkdir(dir.c_str(), 0755);
  gt::Config cfg;
  cfg.model = mc;
  std::ofstream(dir + "/config.toml") << cfg.to_toml();
  const TimeBreakdown t = step_time(ModelShape::from(mc), l, truth, Framework::Gridtrain);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"status\": \"finished\", \"tp\": %d, \"pp\": %d, \"dp\": %d, \"micro_batch_size\": %d, "
                "\"micro_batches\": %d, \"schedule\": \"1f1b\", \"ms_per_step\": %.17g, \"forward_ms\": %.17g, "
                "\"backward_ms\": %.17g, \"optimizer_ms\": %.17g, \"comm_tp_ms\": %.17g, \"comm_dp_ms\": %.17g, "
                "\"data\": \"x \\\" y\"}\n",
                l.tp, l.pp, l.dp, l.micro_batch, l.micro_batches, t.step * 1e3, t.compute * 1e3 / 3,
                t.compute * 2e3 / 3, t.optimizer * 1e3, t.tp * 1e3, t.dp_total * 1e3);
  std::ofstream(dir + "/summary.json") << buf;
  return dir;
}

// A fresh scratch folder ("" when none can be made); the test removes it.
std::string scratch_dir() {
  char tmpl[] = "/tmp/gridtrain_calib_XXXXXX";
  return mkdtemp(tmpl) ? std::string(tmpl) : std::string();
}

// The shape of inputs/small.toml.
gt::ModelConfig small_model() {
  gt::ModelConfig m;
  m.n_layer = 6, m.d_model = 384, m.n_head = 6, m.seq_len = 256, m.vocab_size = 8192;
  return m;
}

}  // namespace

TEST(PlanCalibrate, RoundTrip) {
  const std::string root = scratch_dir();
  ASSERT_FALSE(root.empty());
  const gt::ModelConfig small = small_model();
  gt::ModelConfig tiny;
  tiny.n_layer = 2, tiny.d_model = 128, tiny.n_head = 4, tiny.seq_len = 64, tiny.vocab_size = 256;
  struct R { gt::ModelConfig mc; int tp, pp, dp, b, m; };
  std::vector<std::string> dirs;
  int id = 0;
  for (R r : {R{small, 1, 1, 1, 4, 1}, R{small, 1, 1, 1, 2, 2}, R{tiny, 1, 1, 1, 8, 1}, R{small, 2, 1, 1, 4, 1},
              R{small, 2, 1, 1, 8, 2}, R{tiny, 2, 1, 1, 8, 1}, R{small, 1, 1, 2, 4, 1}, R{small, 1, 2, 1, 4, 4}}) {
    Layout l;
    l.tp = r.tp, l.pp = r.pp, l.dp = r.dp, l.micro_batch = r.b, l.micro_batches = r.m;
    dirs.push_back(write_run(root, id++, r.mc, l, true_cluster()));
  }
  std::vector<RunSample> runs;
  for (const auto& d : dirs) runs.push_back(read_run(d));
  const Calibration cal = calibrate(runs, base_cluster());
  const Cluster& got = cal.cluster;
  const Cluster want = true_cluster();
  auto rel = [](double a, double b) { return std::abs(a - b) / std::abs(b); };
  EXPECT_LT(rel(got.memory_efficiency, want.memory_efficiency), 1e-6);
  ASSERT_EQ(got.gemm_efficiency.size(), 1u);
  EXPECT_LT(rel(got.gemm_efficiency[0], want.gemm_efficiency[0]), 1e-6);
  EXPECT_LT(rel(got.attention_efficiency, want.attention_efficiency), 1e-6);
  EXPECT_LT(rel(got.intra.gbs, want.intra.gbs), 1e-6);
  EXPECT_LT(rel(got.intra.latency_us, want.intra.latency_us), 1e-6);
  EXPECT_LT(rel(got.step_overhead_ms, want.step_overhead_ms), 1e-6);

  // The written description reads back to the same constants.
  const std::string path = root + "/calibrated.toml";
  std::ofstream(path) << cluster_to_toml(got);
  const Cluster back = load_cluster(path);
  EXPECT_LT(rel(back.gemm_efficiency[0], got.gemm_efficiency[0]), 1e-5);  // 6 significant digits written
  EXPECT_LT(rel(back.intra.gbs, got.intra.gbs), 1e-5);
  EXPECT_EQ(back.devices_per_node, got.devices_per_node);

  // A run directory without a summary is an error naming the file.
  EXPECT_THROW(read_run(root + "/missing"), gt::Error);
  std::system(("rm -rf " + root).c_str());
}

// The DP all-reduce's alpha and beta from DP runs alone (no tp > 1 run) plus bench_allreduce's figures file:
// the summaries' comm_dp_ms are the true machine's whole DP traffic, the benchmark rows of "shm-reg" its ring
// all-reduce times; rows of another algorithm in the same file (here ten times slower) must be ignored.
TEST(PlanCalibrate, AllreduceFromDpRunsAndBenchmark) {
  const std::string root = scratch_dir();
  ASSERT_FALSE(root.empty());
  const gt::ModelConfig small = small_model();
  std::vector<RunSample> runs;
  int id = 0;
  for (int dp : {1, 2}) {
    Layout l;
    l.dp = dp, l.micro_batch = 4;
    runs.push_back(read_run(write_run(root, id++, small, l, true_cluster())));
  }
  const Cluster want = true_cluster();
  std::string json = "{\"ranks\":2,\"memcpy_GBs\":9.5,\"loadavg\":\"0.1 0.2\",\"rows\":[";
  for (double bytes : {4096.0, 65536.0, 1048576.0, 16777216.0})
    for (const char* algo : {"mpi", "shm-reg"}) {
      const double t = allreduce_seconds(bytes, 2, want.intra) * (std::string(algo) == "mpi" ? 10 : 1);
      char row[200];
      std::snprintf(row, sizeof row, "%s{\"bytes\":%.0f,\"algo\":\"%s\",\"time_s\":%.17g,\"busbw_GBs\":1}",
                    json.back() == '[' ? "" : ",", bytes, algo, t);
      json += row;
    }
  json += "]}\n";
  std::ofstream(root + "/allreduce.json") << json;
  const std::vector<LinkSample> bench = read_allreduce_bench(root + "/allreduce.json", "shm-reg");
  ASSERT_EQ(bench.size(), 4u);
  auto rel = [](double a, double b) { return std::abs(a - b) / std::abs(b); };
  // the benchmark alone (plus the runs for the compute fit: their DP run carries the same link)
  for (bool with_runs_dp : {false, true}) {
    std::vector<RunSample> rs = runs;
    if (!with_runs_dp) rs[1].dp_ms = -1;
    const Cluster got = calibrate(rs, base_cluster(), bench).cluster;
    EXPECT_LT(rel(got.intra.gbs, want.intra.gbs), 1e-6) << with_runs_dp;
    EXPECT_LT(rel(got.intra.latency_us, want.intra.latency_us), 1e-6) << with_runs_dp;
  }
  // the DP run alone fits the bandwidth with the base's latency (one size: alpha is not identifiable)
  const Cluster dp_only = calibrate(runs, base_cluster()).cluster;
  EXPECT_DOUBLE_EQ(dp_only.intra.latency_us, base_cluster().intra.latency_us);
  EXPECT_GT(dp_only.intra.gbs, 0.0);
  EXPECT_THROW(read_allreduce_bench(root + "/allreduce.json", "nccl"), gt::Error);
  EXPECT_THROW(read_allreduce_bench(root + "/none.json", "shm-reg"), gt::Error);
  std::system(("rm -rf " + root).c_str());
}

// The trainer's summary.json nests a few records (bad_steps) and may carry arrays: the reader must step over
// them and keep reading the top-level keys after them (it stopped at the first nested object before).
TEST(PlanCalibrate, SummaryWithNestedRecords) {
  const std::string text =
      "{\"tp\": 2, \"bad_steps\": {\"policy\": \"stop\", \"bad\": 0, \"inner\": {\"x\": 1}}, "
      "\"list\": [1, [2, \"]\"], {\"a\": 3}], \"ms_per_step\": 12.5, \"s\": \"q\\\"}\"}";
  const auto j = parse_flat_json(text, "summary.json");
  EXPECT_EQ(j.at("tp"), "2");
  EXPECT_EQ(j.at("bad_steps.policy"), "stop");
  EXPECT_EQ(j.at("bad_steps.inner.x"), "1");
  EXPECT_EQ(j.at("ms_per_step"), "12.5");
  EXPECT_EQ(j.at("s"), "q\"}");
  EXPECT_EQ(j.count("list"), 0u);
  EXPECT_THROW(parse_flat_json("{\"a\": {\"b\": 1}", "f"), gt::Error);
}
