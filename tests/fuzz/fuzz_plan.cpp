// libFuzzer target: the planner's command line (parse_plan_args, check_plan_request) and its cluster description
// reader (parse_cluster), then the plan itself (make_plan) on what they accept.
// Input: the command-line arguments one per line, then a line "%%", then the text of a cluster description (no
// "%%": the description is inputs/clusters/cpu-2core.toml's text, kept below). Model overrides among the arguments
// (model.n_layer=...) are applied to the default configuration, as `gridtrain plan` applies them to the deck.
// Oracles: no crash or sanitizer report; no exception but gt::Error; an accepted description reads back the same
// from cluster_to_toml (to its 6 written digits); every layout that fits uses the asked device count, fits in the
// description's usable memory and has a finite, positive step time; the fits are ranked by tokens/s.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/plan/cluster.hpp"
#include "src/plan/plan_cli.hpp"
#include "src/plan/planner.hpp"

namespace {

const char* kDefaultCluster =
    "name = \"fuzz\"\n[device]\nmemory_gb = 2\nmemory_reserved_gb = 0.1\npeak_tflops_fp32 = 0.1\n"
    "gemm_flops = [1e6, 1e9]\ngemm_efficiency = [0.3, 0.9]\nmemory_gbs = 20\n[node]\ndevices = 2\nlink_gbs = 10\n"
    "[network]\ngbs_per_device = 1\n";

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_plan: oracle failed: %s\n", what.c_str());
  std::abort();
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-5 * std::max(std::fabs(a), std::fabs(b)) + 1e-300; }

void check_round_trip(const gt::plan::Cluster& c) {
  std::istringstream again(gt::plan::cluster_to_toml(c));
  gt::plan::Cluster d;
  try {
    d = gt::plan::parse_cluster(again, "round trip");
  } catch (const gt::Error& e) {
    fail(std::string("an accepted description does not read back: ") + e.what());
  }
  const double a[] = {c.memory_gb, c.peak_tflops_fp32, c.peak_tflops_bf16, c.memory_gbs, c.intra.gbs, c.inter.gbs,
                      c.intra.latency_us, c.inter.efficiency, c.attention_efficiency, double(c.devices_per_node)};
  const double b[] = {d.memory_gb, d.peak_tflops_fp32, d.peak_tflops_bf16, d.memory_gbs, d.intra.gbs, d.inter.gbs,
                      d.intra.latency_us, d.inter.efficiency, d.attention_efficiency, double(d.devices_per_node)};
  for (size_t i = 0; i < sizeof a / sizeof a[0]; ++i)
    if (!close(a[i], b[i])) fail("round trip changed figure " + std::to_string(i));
}

void check_plan(const gt::plan::Plan& p, const gt::plan::Cluster& c, const gt::plan::PlanOptions& o) {
  double prev = INFINITY;
  for (const auto& f : p.fits) {
    if (f.layout.devices() != o.devices) fail("a layout of " + std::to_string(f.layout.devices()) + " devices");
    if (!(f.memory.total() <= c.usable_memory_bytes())) fail("a fit over the usable memory: " + f.layout.str());
    if (!(std::isfinite(f.time.step) && f.time.step > 0)) fail("a step time of " + std::to_string(f.time.step));
    if (f.time.tokens_per_s > prev) fail("fits not ranked by tokens/s");
    prev = f.time.tokens_per_s;
  }
  for (const auto& r : p.rejected)
    if (r.reason.empty()) fail("a rejected layout without a reason: " + r.layout.str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t sep = text.find("\n%%\n");
  const std::string args_text = text.substr(0, sep);
  const std::string cluster_text = sep == std::string::npos ? kDefaultCluster : text.substr(sep + 4);
  std::vector<std::string> args;
  std::istringstream lines(args_text);
  for (std::string line; std::getline(lines, line);) {
    line = line.substr(0, line.find('\0'));  // an argv element ends at a NUL byte
    if (!line.empty()) args.push_back(line);
  }
  try {
    const gt::plan::PlanArgs pa = gt::plan::parse_plan_args(args);
    std::istringstream cin(cluster_text);
    const gt::plan::Cluster c = gt::plan::parse_cluster(cin, "fuzz.toml");
    check_round_trip(c);
    gt::Config cfg;
    const gt::plan::ModelShape m = gt::plan::plan_model(cfg, pa.overrides);
    gt::plan::check_plan_request(pa.o, m);
    // Plans of many devices are correct but slow (every divisor pair, every option): the parsing above is what
    // such inputs test; the plan is made up to 4096 devices.
    if (pa.o.devices > 4096) return 0;
    check_plan(gt::plan::make_plan(m, c, pa.o), c, pa.o);
  } catch (const gt::Error&) {
    return 0;
  }
  return 0;
}
