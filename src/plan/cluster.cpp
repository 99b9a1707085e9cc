#include "src/plan/cluster.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sys/stat.h>
#include <sstream>

#include "src/core/deck.hpp"
#include "src/core/error.hpp"

namespace gt::plan {
namespace {

std::string trim(const std::string& s) { return deck_trim(s); }

double to_number(const std::string& v, const std::string& where) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) throw Error(where + ": expected a number, got '" + v + "'");
  return x;
}

std::vector<double> to_list(const std::string& v, const std::string& where) {
  if (v.size() < 2 || v.front() != '[' || v.back() != ']') throw Error(where + ": expected [numbers], got '" + v + "'");
  std::vector<double> out;
  std::stringstream ss(v.substr(1, v.size() - 2));
  std::string item;
  while (std::getline(ss, item, ','))
    if (!trim(item).empty()) out.push_back(to_number(trim(item), where));
  return out;
}

std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The keys of a description and where each goes; one table so that reading and writing cannot drift apart.
struct Key {
  const char* name;
  std::function<double*(Cluster&)> num;  // null for the list and string keys
};
std::vector<Key> numeric_keys() {
  return {
      {"device.memory_gb", [](Cluster& c) { return &c.memory_gb; }},
      {"device.memory_reserved_gb", [](Cluster& c) { return &c.memory_reserved_gb; }},
      {"device.peak_tflops_fp32", [](Cluster& c) { return &c.peak_tflops_fp32; }},
      {"device.peak_tflops_bf16", [](Cluster& c) { return &c.peak_tflops_bf16; }},
      {"device.peak_tflops_fp16", [](Cluster& c) { return &c.peak_tflops_fp16; }},
      {"device.peak_tflops_fp8", [](Cluster& c) { return &c.peak_tflops_fp8; }},
      {"device.attention_efficiency", [](Cluster& c) { return &c.attention_efficiency; }},
      {"device.fused_attention_efficiency", [](Cluster& c) { return &c.fused_attention_efficiency; }},
      {"device.memory_gbs", [](Cluster& c) { return &c.memory_gbs; }},
      {"device.memory_efficiency", [](Cluster& c) { return &c.memory_efficiency; }},
      {"node.devices", nullptr},
      {"node.link_gbs", [](Cluster& c) { return &c.intra.gbs; }},
      {"node.link_latency_us", [](Cluster& c) { return &c.intra.latency_us; }},
      {"node.link_efficiency", [](Cluster& c) { return &c.intra.efficiency; }},
      {"network.gbs_per_device", [](Cluster& c) { return &c.inter.gbs; }},
      {"network.latency_us", [](Cluster& c) { return &c.inter.latency_us; }},
      {"network.efficiency", [](Cluster& c) { return &c.inter.efficiency; }},
      {"overhead.step_ms", [](Cluster& c) { return &c.step_overhead_ms; }},
      {"overhead.microbatch_ms", [](Cluster& c) { return &c.microbatch_overhead_ms; }},
  };
}

}  // namespace

double Cluster::peak_flops(Precision p) const {
  switch (p) {
    case Precision::FP32: return peak_tflops_fp32 * 1e12;
    case Precision::BF16: return peak_tflops_bf16 * 1e12;
    case Precision::FP16: return peak_tflops_fp16 * 1e12;
    case Precision::FP8: return peak_tflops_fp8 * 1e12;
  }
  return 0;
}

double Cluster::gemm_eff(double flops) const {
  if (gemm_flops.empty()) return 1.0;
  if (flops <= gemm_flops.front()) return gemm_efficiency.front();
  for (size_t i = 1; i < gemm_flops.size(); ++i)
    if (flops <= gemm_flops[i]) {
      const double t = std::log(flops / gemm_flops[i - 1]) / std::log(gemm_flops[i] / gemm_flops[i - 1]);
      return gemm_efficiency[i - 1] + t * (gemm_efficiency[i] - gemm_efficiency[i - 1]);
    }
  return gemm_efficiency.back();
}

Cluster load_cluster(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot open cluster description '" + path + "'");
  if (S_ISDIR(st.st_mode)) throw Error("cluster description '" + path + "' is a directory, not a .toml file");
  std::ifstream in(path);
  if (!in) throw Error("cannot open cluster description '" + path + "'");
  return parse_cluster(in, path);
}

namespace {
// One key of a description into the cluster; the deck reader has already refused repeats and bad lines.
void set_cluster_key(Cluster& c, const std::vector<Key>& keys, const DeckEntry& e) {
  const std::string at = e.where + ": '" + e.key + "'";
  const std::string& val = e.value;
  if (e.key == "name") {
    if (val.size() < 2 || val.front() != '"' || val.back() != '"') throw Error(at + ": expected a quoted string");
    c.name = val.substr(1, val.size() - 2);
  } else if (e.key == "node.devices") {
    const double d = to_number(val, at);
    if (d < 1 || d > 1e6 || d != std::floor(d)) throw Error(at + ": must be an integer from 1 to 1000000");
    c.devices_per_node = int(d);
  } else if (e.key == "device.kind") {
    if (val != "\"gpu\"" && val != "\"cpu\"") throw Error(at + ": expected \"gpu\" or \"cpu\", got " + val);
    c.gpu = val == "\"gpu\"";
  } else if (e.key == "device.gemm_flops") {
    c.gemm_flops = to_list(val, at);
  } else if (e.key == "device.gemm_efficiency") {
    c.gemm_efficiency = to_list(val, at);
  } else {
    for (const Key& k : keys)
      if (e.key == k.name && k.num) {
        *k.num(c) = to_number(val, at);
        return;
      }
    throw Error(at + ": unknown key in a cluster description (docs/planner.md lists them)");
  }
}

// The rules between keys and the range of each figure.
void check_cluster(Cluster& c, const std::vector<Key>& keys, const std::string& path) {
  if (c.gemm_flops.size() != c.gemm_efficiency.size())
    throw Error(path + ": 'device.gemm_flops' and 'device.gemm_efficiency' differ in length");
  for (size_t i = 0; i < c.gemm_flops.size(); ++i) {
    if (!(c.gemm_efficiency[i] > 0 && c.gemm_efficiency[i] <= 1))
      throw Error(path + ": 'device.gemm_efficiency' values must lie in (0, 1]");
    if (!(c.gemm_flops[i] > 0) || (i > 0 && c.gemm_flops[i] <= c.gemm_flops[i - 1]))
      throw Error(path + ": 'device.gemm_flops' must be positive and increasing");
  }
  // Precisions the device has no faster path for run at the fp32 rate.
  if (c.peak_tflops_bf16 <= 0) c.peak_tflops_bf16 = c.peak_tflops_fp32;
  if (c.peak_tflops_fp16 <= 0) c.peak_tflops_fp16 = c.peak_tflops_bf16;
  // Every figure in [0, 1e9]: far above any device or link (a 1e300 peak made every time zero and the
  // ranking a comparison of NaNs).
  for (const Key& k : keys)
    if (k.num && !(*k.num(c) >= 0 && *k.num(c) <= 1e9))
      throw Error(path + ": '" + k.name + "' = " + shortest(*k.num(c)) + " is out of range (0 to 1e9)");
  if (c.fused_attention_efficiency > 1) throw Error(path + ": 'device.fused_attention_efficiency' must lie in (0, 1]");
  for (const char* k : {"device.attention_efficiency", "device.memory_efficiency"})
    for (const Key& kk : keys)
      if (std::string(kk.name) == k && !(*kk.num(c) > 0 && *kk.num(c) <= 1))
        throw Error(path + ": '" + k + "' must lie in (0, 1]");
  for (const char* k : {"device.memory_gb", "device.peak_tflops_fp32", "device.memory_gbs", "node.link_gbs",
                        "network.gbs_per_device"})
    for (const Key& kk : keys)
      if (std::string(kk.name) == k && !(*kk.num(c) > 0)) throw Error(path + ": '" + k + "' must be positive");
  if (c.memory_reserved_gb >= c.memory_gb) throw Error(path + ": 'device.memory_reserved_gb' leaves no memory");
  for (const LinkLevel* l : {&c.intra, &c.inter})
    if (!(l->efficiency > 0 && l->efficiency <= 1)) throw Error(path + ": link efficiencies must lie in (0, 1]");
}
}  // namespace

Cluster parse_cluster(std::istream& in, const std::string& path) {
  Cluster c;
  const auto keys = numeric_keys();
  std::set<std::string> seen;
  for (const DeckEntry& e : read_deck(in, path)) {
    set_cluster_key(c, keys, e);
    seen.insert(e.key);
  }
  if (seen.empty()) throw Error(path + ": no keys: not a cluster description (docs/planner.md lists the keys)");
  const std::vector<std::string> required = {"name", "node.devices", "device.memory_gb", "device.peak_tflops_fp32",
                                             "device.memory_gbs", "node.link_gbs", "network.gbs_per_device"};
  for (const auto& k : required)
    if (!seen.count(k)) throw Error(path + ": missing key '" + k + "'");
  check_cluster(c, keys, path);
  return c;
}

std::string cluster_to_toml(const Cluster& c) {
  std::ostringstream o;
  o.precision(6);
  o << "name = \"" << c.name << "\"\n";
  Cluster copy = c;
  std::string section;
  auto list = [&](const std::vector<double>& v) {
    std::ostringstream l;
    l.precision(6);
    l << "[";
    for (size_t i = 0; i < v.size(); ++i) l << (i ? ", " : "") << v[i];
    return l.str() + "]";
  };
  for (const Key& k : numeric_keys()) {
    const std::string key = k.name;
    const std::string sec = key.substr(0, key.find('.')), leaf = key.substr(key.find('.') + 1);
    if (sec != section) {
      o << "\n[" << sec << "]\n";
      section = sec;
      if (sec == "device") {
        o << "kind = \"" << (c.gpu ? "gpu" : "cpu") << "\"\n";
        o << "gemm_flops = " << list(c.gemm_flops) << "\n";
        o << "gemm_efficiency = " << list(c.gemm_efficiency) << "\n";
      }
    }
    if (key == "node.devices")
      o << leaf << " = " << c.devices_per_node << "\n";
    else
      o << leaf << " = " << *k.num(copy) << "\n";
  }
  return o.str();
}

}  // namespace gt::plan
