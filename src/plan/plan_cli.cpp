#include "src/plan/plan_cli.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/plan/calibrate.hpp"
#include "src/plan/report.hpp"

namespace gt::plan {

const char* kPlanUsage =
    "usage: gridtrain plan --config DECK --cluster NAME|FILE --devices N --global-batch B [section.key=value ...]\n"
    "                      [--framework gridtrain|megatron|megatron-core-2024|deepspeed-zero3|torchtitan-fsdp2|llm.c]\n"
    "                      [--precision fp32,bf16,fp16,fp8] [--zero 0,1,2,3] [--recompute none,selective,full]\n"
    "                      [--micro-batch 1,2,4] [--tp N] [--pp N] [--cp N] [--virtual-stages 1,2] [--gpipe]\n"
    "                      [--tp-overlap on|off] [--sequence-parallel on|off] [--tp-across-nodes] [--top N]\n"
    "                      [--json] [--plot OUT.png]\n"
    "                      model keys: model.n_layer= ... and model.arch=gpt2|llama model.ffn_hidden=N\n"
    "                      model.n_kv_head=N model.attention=fused|materialized model.tie_embeddings=true|false\n"
    "       gridtrain plan --calibrate RUN_DIR... [ALLREDUCE.json...] [--allreduce-algo shm-reg] [--cluster BASE]\n"
    "                      [--out FILE.toml]   (ALLREDUCE.json: bench_allreduce's figures file)\n";

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// An integer option in [lo, hi]: the whole text must be a number, and one that does not fit (or wraps) is
// named, never truncated (`--devices 99999999999` used to become 1215752191).
long to_int(const std::string& opt, const std::string& v, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') throw Error("plan: " + opt + " expects an integer, got '" + v + "'");
  if (errno == ERANGE || x < lo || x > hi)
    throw Error("plan: " + opt + " " + v + " is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) +
                (lo == 1 && (opt == "--tp" || opt == "--pp") ? "; leave it out for any degree" : "") + ")");
  return long(x);
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path + ".tmp");
  f << text;
  f.close();
  if (!f || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw Error("plan: cannot write '" + path + "'");
}

int calibrate_main(const std::vector<std::string>& args, const std::string& base_name, const std::string& algo,
                   const std::string& out) {
  std::vector<std::string> dirs, benches;
  for (const auto& a : args) (a.size() > 5 && a.substr(a.size() - 5) == ".json" ? benches : dirs).push_back(a);
  if (dirs.empty()) throw Error("plan: --calibrate needs at least one run directory");
  const Cluster base = load_cluster(resolve_cluster(base_name.empty() ? "cpu-2core" : base_name));
  std::vector<RunSample> runs;
  for (const auto& d : dirs) runs.push_back(read_run(d));
  std::vector<LinkSample> links;
  for (const auto& b : benches)
    for (const LinkSample& l : read_allreduce_bench(b, algo)) links.push_back(l);
  const Calibration cal = calibrate(runs, base, links);
  std::string text = "# written by gridtrain plan --calibrate from:";
  for (const auto& d : args) text += " " + d;
  text += "\n";
  for (const auto& n : cal.notes) text += "# " + n + "\n";
  text += cluster_to_toml(cal.cluster);
  if (out.empty())
    std::fputs(text.c_str(), stdout);
  else
    write_text(out, text);
  return 0;
}

}  // namespace

std::string resolve_cluster(const std::string& name) {
  if (name.find('/') != std::string::npos || name.find(".toml") != std::string::npos) return name;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("GRIDTRAIN_INPUTS")) dirs.push_back(env);
#ifdef GRIDTRAIN_INPUTS_DIR
  dirs.push_back(GRIDTRAIN_INPUTS_DIR);
#endif
  dirs.push_back("inputs");
  for (const auto& d : dirs)
    if (exists(d + "/clusters/" + name + ".toml")) return d + "/clusters/" + name + ".toml";
  throw Error("plan: unknown cluster '" + name + "': no inputs/clusters/" + name + ".toml");
}

PlanArgs parse_plan_args(const std::vector<std::string>& args) {
  PlanArgs r;
  PlanOptions& o = r.o;
  o.devices = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error("plan: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--config" || a == "-c") r.deck = value();
    else if (a == "--cluster") r.cluster = value();
    else if (a == "--devices") o.devices = int(to_int(a, value(), 1, kMaxDevices));
    else if (a == "--global-batch") o.global_batch = to_int(a, value(), 1, kMaxGlobalBatch);
    else if (a == "--framework") o.framework = parse_framework(value());
    else if (a == "--tp") o.tp = int(to_int(a, value(), 1, kMaxDevices));
    else if (a == "--pp") o.pp = int(to_int(a, value(), 1, kMaxDevices));
    else if (a == "--cp") o.cp = int(to_int(a, value(), 1, kMaxDevices));
    else if (a == "--tp-overlap") {
      const std::string v = value();
      if (v != "on" && v != "off") throw Error("plan: --tp-overlap expects on or off, got '" + v + "'");
      o.tp_overlap = v == "on" ? 1 : 0;
    }
    else if (a == "--sequence-parallel") {
      const std::string v = value();
      if (v != "on" && v != "off") throw Error("plan: --sequence-parallel expects on or off, got '" + v + "'");
      o.sequence_parallel = v == "on" ? 1 : 0;
    }
    else if (a == "--top") r.top = int(to_int(a, value(), 1, 1000000));
    else if (a == "--plot") r.plot = value();
    else if (a == "--out") r.out = value();
    else if (a == "--allreduce-algo") r.allreduce_algo = value();
    else if (a == "--json") r.json = true;
    else if (a == "--gpipe") o.gpipe = true;
    else if (a == "--tp-across-nodes") o.tp_across_nodes = true;
    else if (a == "--calibrate") r.calibrating = true;
    else if (a == "--precision" || a == "--zero" || a == "--recompute" || a == "--micro-batch" ||
             a == "--virtual-stages") {
      const std::vector<std::string> items = split_list(value());
      if (items.empty()) throw Error("plan: " + a + " needs a comma-separated list");
      if (a == "--precision") { o.precisions.clear(); for (auto& s : items) o.precisions.push_back(parse_precision(s)); }
      if (a == "--recompute") { o.recomputes.clear(); for (auto& s : items) o.recomputes.push_back(parse_recompute(s)); }
      if (a == "--zero") {
        o.zero_stages.clear();
        for (auto& s : items) {
          const long z = to_int(a, s, -1000000, 1000000);
          if (z < 0 || z > 3) throw Error("plan: --zero stages are 0-3, got " + s);
          o.zero_stages.push_back(int(z));
        }
      }
      if (a == "--virtual-stages") {
        o.virtual_stages.clear();
        for (auto& s : items) o.virtual_stages.push_back(int(to_int(a, s, 1, 1024)));
      }
      if (a == "--micro-batch") {
        o.micro_batch_sizes.clear();
        for (auto& s : items) o.micro_batch_sizes.push_back(int(to_int(a, s, 1, kMaxMicroBatch)));
        o.max_micro_batch = *std::max_element(o.micro_batch_sizes.begin(), o.micro_batch_sizes.end());
      }
    } else if (a.rfind("--", 0) == 0) {
      throw Error("plan: unknown option '" + a + "'");
    } else if (r.calibrating && a.find('=') == std::string::npos) {
      r.calib_args.push_back(a);
    } else if (a.find('=') != std::string::npos) {
      r.overrides.push_back(a);
    } else {
      throw Error("plan: unexpected argument '" + a + "'");
    }
  }
  return r;
}

namespace {

std::string join(const std::vector<long>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// A fixed degree must divide the device count (alone and together with the other fixed degree).
void check_degree(const char* opt, int degree, long devices) {
  if (degree > devices)
    throw Error(std::string("plan: ") + opt + " " + std::to_string(degree) + " is more than the " +
                std::to_string(devices) + " devices");
  if (devices % degree != 0)
    throw Error(std::string("plan: ") + opt + " " + std::to_string(degree) + " does not divide the " +
                std::to_string(devices) + " devices");
}

// Every data-parallel degree the request allows (devices / (tp pp) for each allowed tp, pp).
std::vector<long> allowed_dp(const PlanOptions& o) {
  std::vector<long> dps;
  const long devices = o.devices / std::max(1, o.cp);
  for (long d = 1; d <= devices; ++d) {
    if (devices % d) continue;
    const long rest = devices / d;  // tp x pp
    if (o.tp > 0 && rest % o.tp) continue;
    if (o.pp > 0 && rest % o.pp) continue;
    if (o.tp > 0 && o.pp > 0 && long(o.tp) * o.pp != rest) continue;
    dps.push_back(d);
  }
  return dps;
}

}  // namespace

void check_plan_request(const PlanOptions& o, const ModelShape& m) {
  if (o.devices < 1) throw Error("plan: --devices N (at least 1) is required");
  if (o.global_batch < 1 && o.fixed_micro_batches < 1) throw Error("plan: --global-batch B (at least 1) is required");
  if (o.cp > 1) check_degree("--cp", o.cp, o.devices);
  if (o.tp > 0) check_degree("--tp", o.tp, o.devices / o.cp);
  if (o.pp > 0) check_degree("--pp", o.pp, o.devices / o.cp);
  if (o.tp > 0 && o.pp > 0 && (o.devices / o.cp) % (long(o.tp) * o.pp) != 0)
    throw Error("plan: --tp " + std::to_string(o.tp) + " x --pp " + std::to_string(o.pp) + " = " +
                std::to_string(long(o.tp) * o.pp) + " does not divide the " + std::to_string(o.devices / o.cp) +
                " devices" + (o.cp > 1 ? " left by --cp " + std::to_string(o.cp) : ""));
  if (o.pp > 0 && o.pp > m.L)
    throw Error("plan: --pp " + std::to_string(o.pp) + " is more than the model's " + std::to_string(m.L) + " layers");
  // The per-rank batch of every allowed dp, and whether a micro-batch size divides any of them.
  if (o.fixed_micro_batches < 1) {
    std::vector<long> per_rank;
    for (long d : allowed_dp(o))
      if (o.global_batch % d == 0) per_rank.push_back(o.global_batch / d);
    if (per_rank.empty())
      throw Error("plan: --global-batch " + std::to_string(o.global_batch) + " is not divisible by any data-parallel " +
                  "degree the request allows (dp " + join(allowed_dp(o)) + ")");
    if (!o.micro_batch_sizes.empty()) {
      bool any = false;
      for (long b : o.micro_batch_sizes)
        for (long pr : per_rank) any = any || pr % b == 0;
      std::vector<long> sizes(o.micro_batch_sizes.begin(), o.micro_batch_sizes.end());
      if (!any)
        throw Error("plan: --micro-batch " + join(sizes) + " divides none of the per-rank batches (global batch " +
                    std::to_string(o.global_batch) + " over the allowed dp gives " + join(per_rank) + ")");
    }
  }
  // The model within the planner's limits (its element counts stay well inside 64-bit integers).
  auto limit = [](const char* key, long v, long hi) {
    if (v > hi)
      throw Error(std::string("plan: ") + key + " = " + std::to_string(v) + " is beyond what the planner plans (at most " +
                  std::to_string(hi) + ")");
  };
  limit("model.n_layer", m.L, 1L << 16);
  limit("model.d_model", m.h, 1L << 20);
  limit("model.n_head", m.a, 1L << 16);
  limit("model.seq_len", m.s, 1L << 22);
  limit("model.vocab_size", m.V, 1L << 24);
  check_model_shape(m);
  if (o.cp > 1 && m.s % (2L * o.cp) != 0)
    throw Error("plan: --cp " + std::to_string(o.cp) + " does not split model.seq_len = " + std::to_string(m.s) +
                " into 2 x cp equal chunks (the causal load balance)");
  for (int v : o.virtual_stages)
    if (v > m.L) throw Error("plan: --virtual-stages " + std::to_string(v) + " is more than the " + std::to_string(m.L) + " layers");
}

ModelShape plan_model(Config& cfg, const std::vector<std::string>& overrides) {
  std::vector<std::pair<std::string, std::string>> planner_keys;
  for (const auto& ov : overrides) {
    const size_t eq = ov.find('=');
    const std::string key = ov.substr(0, eq), val = ov.substr(eq + 1);
    ModelShape probe;
    if (apply_model_key(probe, key, val))
      planner_keys.push_back({key, val});  // the planner's own reading (auto attention, tie_embeddings, no engine limits)
    else
      cfg.set(ov);
  }
  cfg.validate();
  ModelShape m = ModelShape::from(cfg.model);
  for (const auto& [k, v] : planner_keys) apply_model_key(m, k, v);
  return m;
}

int plan_main(const std::vector<std::string>& args) {
  const PlanArgs pa = parse_plan_args(args);
  if (pa.calibrating) return calibrate_main(pa.calib_args, pa.cluster, pa.allreduce_algo, pa.out);
  const PlanOptions& o = pa.o;
  const std::string& plot = pa.plot;
  if (pa.deck.empty()) throw Error("plan: --config DECK is required");
  if (pa.cluster.empty()) throw Error("plan: --cluster NAME|FILE is required (inputs/clusters/*.toml)");
  if (o.devices < 1) throw Error("plan: --devices N (at least 1) is required");
  if (o.global_batch < 1) throw Error("plan: --global-batch B (at least 1) is required");
  Config cfg;
  cfg.load_file(resolve_deck(pa.deck));
  const ModelShape m = plan_model(cfg, pa.overrides);
  check_plan_request(o, m);
  const Cluster c = load_cluster(resolve_cluster(pa.cluster));
  const Plan p = make_plan(m, c, o);
  if (p.fits.empty())
    throw Error("plan: no layout of " + std::to_string(o.devices) + " devices fits (" + rejection_summary(p, 1) + ")");
  std::vector<ScalingPoint> scaling;
  if (!plot.empty()) {
    // The predicted scaling curve: the best layout at every power of two up to N devices, same global batch.
    for (int n = 1; n <= o.devices; n *= 2) {
      PlanOptions on = o;
      on.devices = n;
      const Plan pn = make_plan(m, c, on);
      if (!pn.fits.empty()) scaling.push_back({n, pn.fits[0]});
      if (n * 2 > o.devices && n != o.devices) n = o.devices / 2;  // end on N itself
    }
  }
  const std::string js = plan_json(p, m, c, o, scaling);
  if (pa.json)
    std::fputs(js.c_str(), stdout);
  else
    std::fputs(plan_table(p, m, c, o, pa.top).c_str(), stdout);
  if (!plot.empty()) {
    write_text(plot + ".json", js);
    std::string script = "scripts/plan_plot.py";
#ifdef GRIDTRAIN_SOURCE_DIR
    script = std::string(GRIDTRAIN_SOURCE_DIR) + "/" + script;
#endif
    // python3-matplotlib (scripts/setup.sh) belongs to Debian's interpreter, which a pyenv on PATH may hide.
    const std::string python = exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const std::string cmd = python + " '" + script + "' '" + plot + ".json' '" + plot + "'";
    if (std::system(cmd.c_str()) != 0) throw Error("plan: the plot script failed: " + cmd);
    if (!pa.json) std::printf("plot: %s (data %s.json)\n", plot.c_str(), plot.c_str());
  }
  return 0;
}

}  // namespace gt::plan
