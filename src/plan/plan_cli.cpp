#include "src/plan/plan_cli.hpp"

#include <sys/stat.h>

#include <algorithm>
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
    "                      [--framework gridtrain|megatron] [--precision fp32,bf16,fp16] [--zero 0,1,2,3]\n"
    "                      [--recompute none,selective,full] [--micro-batch 1,2,4] [--tp N] [--pp N] [--gpipe]\n"
    "                      [--tp-across-nodes] [--top N] [--json] [--plot OUT.png]\n"
    "       gridtrain plan --calibrate RUN_DIR... [ALLREDUCE.json...] [--allreduce-algo shm-reg] [--cluster BASE]\n"
    "                      [--out FILE.toml]   (ALLREDUCE.json: bench_allreduce's figures file)\n";

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

long to_long(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') throw Error("plan: " + opt + " expects an integer, got '" + v + "'");
  return x;
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

int plan_main(const std::vector<std::string>& args) {
  std::string deck, cluster_name, plot, out, allreduce_algo = "shm-reg";
  std::vector<std::string> overrides, calib_dirs;
  bool json = false, calibrating = false;
  int top = 15;
  PlanOptions o;
  o.devices = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error("plan: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--config" || a == "-c") deck = value();
    else if (a == "--cluster") cluster_name = value();
    else if (a == "--devices") o.devices = int(to_long(a, value()));
    else if (a == "--global-batch") o.global_batch = to_long(a, value());
    else if (a == "--framework") o.framework = parse_framework(value());
    else if (a == "--tp") o.tp = int(to_long(a, value()));
    else if (a == "--pp") o.pp = int(to_long(a, value()));
    else if (a == "--top") top = int(to_long(a, value()));
    else if (a == "--plot") plot = value();
    else if (a == "--out") out = value();
    else if (a == "--allreduce-algo") allreduce_algo = value();
    else if (a == "--json") json = true;
    else if (a == "--gpipe") o.gpipe = true;
    else if (a == "--tp-across-nodes") o.tp_across_nodes = true;
    else if (a == "--calibrate") calibrating = true;
    else if (a == "--precision" || a == "--zero" || a == "--recompute" || a == "--micro-batch") {
      const std::vector<std::string> items = split_list(value());
      if (items.empty()) throw Error("plan: " + a + " needs a comma-separated list");
      if (a == "--precision") { o.precisions.clear(); for (auto& s : items) o.precisions.push_back(parse_precision(s)); }
      if (a == "--recompute") { o.recomputes.clear(); for (auto& s : items) o.recomputes.push_back(parse_recompute(s)); }
      if (a == "--zero") {
        o.zero_stages.clear();
        for (auto& s : items) {
          const long z = to_long(a, s);
          if (z < 0 || z > 3) throw Error("plan: --zero stages are 0-3, got " + s);
          o.zero_stages.push_back(int(z));
        }
      }
      if (a == "--micro-batch") {
        o.micro_batch_sizes.clear();
        for (auto& s : items) o.micro_batch_sizes.push_back(int(to_long(a, s)));
        o.max_micro_batch = *std::max_element(o.micro_batch_sizes.begin(), o.micro_batch_sizes.end());
      }
    } else if (a.rfind("--", 0) == 0) {
      throw Error("plan: unknown option '" + a + "'");
    } else if (calibrating && a.find('=') == std::string::npos) {
      calib_dirs.push_back(a);
    } else if (a.find('=') != std::string::npos) {
      overrides.push_back(a);
    } else {
      throw Error("plan: unexpected argument '" + a + "'");
    }
  }
  if (calibrating) return calibrate_main(calib_dirs, cluster_name, allreduce_algo, out);

  if (deck.empty()) throw Error("plan: --config DECK is required");
  if (cluster_name.empty()) throw Error("plan: --cluster NAME|FILE is required (inputs/clusters/*.toml)");
  if (o.devices < 1) throw Error("plan: --devices N (at least 1) is required");
  if (o.global_batch < 1) throw Error("plan: --global-batch B (at least 1) is required");
  if (top < 1) throw Error("plan: --top must be at least 1");
  Config cfg;
  cfg.load_file(resolve_deck(deck));
  for (const auto& ov : overrides) cfg.set(ov);
  cfg.validate();
  const ModelShape m = ModelShape::from(cfg.model);
  const Cluster c = load_cluster(resolve_cluster(cluster_name));
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
  if (json)
    std::fputs(js.c_str(), stdout);
  else
    std::fputs(plan_table(p, m, c, o, top).c_str(), stdout);
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
    if (!json) std::printf("plot: %s (data %s.json)\n", plot.c_str(), plot.c_str());
  }
  return 0;
}

}  // namespace gt::plan
