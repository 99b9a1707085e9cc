#include "src/plan/calibrate.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "src/core/config.hpp"
#include "src/core/deck.hpp"
#include "src/core/json.hpp"
#include "src/core/error.hpp"
#include "src/plan/step_time.hpp"

namespace gt::plan {

RunSample read_run(const std::string& dir) {
  const std::string sfile = dir + "/summary.json", cfile = dir + "/config.toml";
  std::ifstream in(sfile);
  if (!in) throw Error("calibrate: cannot open '" + sfile + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = parse_flat_json(ss.str(), sfile);
  auto get = [&](const char* k) {
    auto it = j.find(k);
    if (it == j.end()) throw Error("calibrate: '" + sfile + "' has no '" + k + "'");
    return std::strtod(it->second.c_str(), nullptr);
  };
  // Only the [model] section matters here; read leniently (a repeated section allowed) so that run directories
  // from before Config::to_toml wrote one [section] each still read.
  Config cfg;
  std::ifstream deck(cfile);
  if (!deck) throw Error("calibrate: cannot open '" + cfile + "'");
  DeckRules lenient;
  lenient.strict = false;
  for (const DeckEntry& e : read_deck(deck, cfile, lenient))
    if (e.key.rfind("model.", 0) == 0) cfg.set(e.key + "=" + e.value, e.where);
  RunSample r;
  r.dir = dir;
  r.model = ModelShape::from(cfg.model);
  r.layout.tp = int(get("tp"));
  r.layout.pp = int(get("pp"));
  r.layout.dp = int(get("dp"));
  r.layout.micro_batch = int(get("micro_batch_size"));
  r.layout.micro_batches = int(get("micro_batches"));
  r.layout.gpipe = j.count("schedule") && j.at("schedule") == "gpipe";
  r.step_ms = get("ms_per_step");
  r.compute_ms = get("forward_ms") + get("backward_ms");
  r.optimizer_ms = get("optimizer_ms");
  r.tp_ms = get("comm_tp_ms");
  if (j.count("comm_dp_ms")) r.dp_ms = get("comm_dp_ms");
  if (!(r.step_ms > 0)) throw Error("calibrate: '" + sfile + "' has no timed steps (ms_per_step 0)");
  return r;
}

std::vector<LinkSample> read_allreduce_bench(const std::string& path, const std::string& algo) {
  std::ifstream in(path);
  if (!in) throw Error("calibrate: cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // {"ranks":2, ..., "rows":[{flat}, {flat}, ...]}: the rows are flat objects, the header's numbers come first.
  const size_t rows = text.find("\"rows\"");
  const size_t ranks_at = text.find("\"ranks\"");
  if (rows == std::string::npos || ranks_at == std::string::npos)
    throw Error("calibrate: '" + path + "' is not a bench_allreduce figures file (no \"ranks\" or \"rows\")");
  const int ranks = std::atoi(text.c_str() + text.find(':', ranks_at) + 1);
  std::vector<LinkSample> out;
  for (size_t b = text.find('{', rows); b != std::string::npos; b = text.find('{', b + 1)) {
    const size_t e = text.find('}', b);
    if (e == std::string::npos) throw Error("calibrate: '" + path + "': unterminated row");
    const auto row = parse_flat_json(text.substr(b, e - b + 1), path);
    if (!row.count("algo") || !row.count("bytes") || !row.count("time_s"))
      throw Error("calibrate: '" + path + "': a row without algo, bytes or time_s");
    if (row.at("algo") == algo)
      out.push_back({ranks, std::strtod(row.at("bytes").c_str(), nullptr), std::strtod(row.at("time_s").c_str(), nullptr)});
  }
  if (out.empty()) throw Error("calibrate: '" + path + "' has no rows of algorithm '" + algo + "'");
  return out;
}

namespace {
// Prediction with the cluster `c` (gridtrain framework: these are gridtrain runs).
TimeBreakdown predict(const RunSample& r, const Cluster& c) { return step_time(r.model, r.layout, c, Framework::Gridtrain); }

// 1. Memory efficiency from the optimizer's time: AdamW is a pure stream (predicted time ~ 1 / efficiency).
void fit_memory_efficiency(const std::vector<RunSample>& runs, Cluster& c, std::vector<std::string>& notes) {
  double num = 0, den = 0;
  for (const RunSample& r : runs) {
    const double pred = predict(r, c).optimizer * 1e3 * c.memory_efficiency;  // ms at efficiency 1
    num += pred * r.optimizer_ms;
    den += r.optimizer_ms * r.optimizer_ms;
  }
  if (num > 0 && den > 0) c.memory_efficiency = std::min(1.0, num / den);
  notes.push_back("memory efficiency " + std::to_string(c.memory_efficiency) + " from the optimizer time");
}

// 2. GEMM efficiency (one figure for all sizes; attention keeps its ratio to it): the compute of pp = 1
// runs is X / eff + E, X the GEMM and attention time at efficiency 1, E the element-wise time.
void fit_gemm_efficiency(const std::vector<RunSample>& runs, const Cluster& base, Cluster& c,
                         std::vector<std::string>& notes) {
  const double ratio = base.attention_efficiency / base.gemm_eff(1e12);
  Cluster unit = c;
  unit.gemm_flops = {1.0};
  unit.gemm_efficiency = {1.0};
  unit.attention_efficiency = ratio;
  Cluster zero_mem = unit;  // separates E: the same with an infinitely fast memory
  zero_mem.memory_gbs = 1e30;
  double num = 0, den = 0;
  int used = 0;
  for (const RunSample& r : runs) {
    if (r.layout.pp != 1 && !r.stage_compute) continue;
    const double x = predict(r, zero_mem).compute * 1e3, e = predict(r, unit).compute * 1e3 - x;
    num += x * (r.compute_ms - e);
    den += x * x;
    ++used;
  }
  if (used == 0) throw Error("calibrate: needs at least one run with pp = 1 to fit the GEMM efficiency");
  const double inv = num / den;
  if (!(inv >= 1.0)) throw Error("calibrate: the runs computed faster than the description's peak FLOP/s");
  c.gemm_flops = {1.0};
  c.gemm_efficiency = {1.0 / inv};
  c.attention_efficiency = ratio / inv;
  notes.push_back("GEMM efficiency " + std::to_string(1.0 / inv) + " from " + std::to_string(used) + " pp=1 runs");
}

// 3. The node link's alpha and beta, one joint fit (TP and DP use the same link on one node): exposed TP
// time, DP time and benchmark all-reduces are each n_msg * alpha + bytes_term / bandwidth, linear in both.
// DP: against the model's whole DP traffic (dp_total), not its exposed share: on CPU nodes the ranks' own
// cores do the reduction, so the trainer's blocked DP time is all of it (docs/planner.md, "Calibration").
void fit_node_link(const std::vector<RunSample>& runs, const std::vector<LinkSample>& allreduce_bench, Cluster& c,
                   std::vector<std::string>& notes) {
  std::vector<std::array<double, 3>> rows;  // coefficient of alpha (s), of 1/bandwidth (s GB/s), measured (s)
  int n_tp = 0, n_dp = 0;
  for (const RunSample& r : runs) {
    Cluster a = c, b = c;
    a.intra = {1e30, 1.0, 1.0};   // latency only: 1 us each
    b.intra = {1.0, 0.0, 1.0};    // bandwidth only: 1 GB/s
    if (r.layout.tp >= 2) {
      rows.push_back({predict(r, a).tp, predict(r, b).tp, r.tp_ms * 1e-3});
      ++n_tp;
    }
    if (r.layout.dp >= 2 && r.dp_ms >= 0) {
      rows.push_back({predict(r, a).dp_total, predict(r, b).dp_total, r.dp_ms * 1e-3});
      ++n_dp;
    }
  }
  for (const LinkSample& s : allreduce_bench)  // ring all-reduce: 2(k-1) alpha + 2(k-1)/k n / B
    rows.push_back({2.0 * (s.ranks - 1) * 1e-6, 2.0 * (s.ranks - 1) / s.ranks * s.bytes * 1e-9, s.seconds});
  if (!rows.empty()) {
    double saa = 0, sab = 0, sbb = 0, sam = 0, sbm = 0;
    for (auto& w : rows) {
      saa += w[0] * w[0]; sab += w[0] * w[1]; sbb += w[1] * w[1]; sam += w[0] * w[2]; sbm += w[1] * w[2];
    }
    const double det = saa * sbb - sab * sab;
    double alpha_us = c.intra.latency_us, inv_gbs;
    if (rows.size() >= 2 && std::abs(det) > 1e-12 * saa * sbb) {
      alpha_us = (sam * sbb - sbm * sab) / det;
      inv_gbs = (saa * sbm - sab * sam) / det;
    } else {  // one size: keep the base alpha, fit the bandwidth
      double rest = 0;
      for (auto& w : rows) rest += w[1] * (w[2] - w[0] * alpha_us);
      inv_gbs = rest / sbb;
    }
    if (rows.size() == 1 && !(inv_gbs > 0)) {
      // One exposed time below the base description's latency alone (the overlap hid the rest, as a live run's
      // DP reduction behind its backward does): nothing to fit a bandwidth to. The base link stays, said so,
      // rather than no calibration at all (a live re-layout's evaluation at dp 4 failed so, 2026-12-06).
      notes.push_back("node link kept from the base description: the one measured TP/DP time (" +
                      std::to_string(rows[0][2] * 1e3) + " ms) is below its latency term");
      return;
    }
    if (alpha_us < 0 || !(inv_gbs > 0))
      throw Error("calibrate: the TP/DP/benchmark times do not fit a latency-bandwidth model (negative latency or "
                  "bandwidth)");
    c.intra.latency_us = alpha_us;
    c.intra.gbs = 1.0 / inv_gbs;
    c.intra.efficiency = 1.0;
    notes.push_back("node link " + std::to_string(c.intra.gbs) + " GB/s, " + std::to_string(alpha_us) +
                        " us from " + std::to_string(n_tp) + " tp>1 runs, " + std::to_string(n_dp) + " dp>1 runs and " +
                        std::to_string(allreduce_bench.size()) + " benchmark all-reduces");
  } else {
    notes.push_back("node link kept from the base description (no tp>1 or dp>1 runs, no benchmark)");
  }
}

// 4. Per-step overhead: the mean of what the model leaves unexplained, never negative.
void fit_step_overhead(const std::vector<RunSample>& runs, Cluster& c, std::vector<std::string>& notes) {
  double sum = 0;
  for (const RunSample& r : runs) sum += r.step_ms - predict(r, c).step * 1e3;
  c.step_overhead_ms = std::max(0.0, sum / runs.size());
  notes.push_back("step overhead " + std::to_string(c.step_overhead_ms) + " ms (mean residual)");
}
}  // namespace

Calibration calibrate(const std::vector<RunSample>& runs, const Cluster& base,
                      const std::vector<LinkSample>& allreduce_bench) {
  if (runs.empty()) throw Error("calibrate: no runs given");
  Calibration cal;
  Cluster c = base;
  c.name = base.name + " (calibrated from " + std::to_string(runs.size()) + " runs)";
  c.step_overhead_ms = 0;
  c.microbatch_overhead_ms = 0;

  // In this order: each fit uses the constants fitted before it.
  fit_memory_efficiency(runs, c, cal.notes);
  fit_gemm_efficiency(runs, base, c, cal.notes);
  fit_node_link(runs, allreduce_bench, c, cal.notes);
  fit_step_overhead(runs, c, cal.notes);
  cal.cluster = c;
  return cal;
}

}  // namespace gt::plan
