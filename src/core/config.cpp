#include "src/core/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>

#include "src/core/error.hpp"

namespace gt {
namespace {

enum class Kind { Int, Int64, Double, Bool, String };

struct Field {
  std::string key;
  Kind kind;
  void* ptr;
  std::vector<std::string> choices = {};  // a String key that takes one of these names (the one list of them)
};

std::vector<Field> schema(Config& c) {
  return {
      {"model.n_layer", Kind::Int, &c.model.n_layer},
      {"model.d_model", Kind::Int, &c.model.d_model},
      {"model.n_head", Kind::Int, &c.model.n_head},
      {"model.attention", Kind::String, &c.model.attention, {"fused", "materialized"}},
      {"model.arch", Kind::String, &c.model.arch, {"gpt2", "llama"}},
      {"model.n_kv_head", Kind::Int, &c.model.n_kv_head},
      {"model.ffn_hidden", Kind::Int, &c.model.ffn_hidden},
      {"model.rope_theta", Kind::Double, &c.model.rope_theta},
      {"model.norm_eps", Kind::Double, &c.model.norm_eps},
      {"model.seq_len", Kind::Int, &c.model.seq_len},
      {"model.vocab_size", Kind::Int, &c.model.vocab_size},
      {"model.init_std", Kind::Double, &c.model.init_std},
      {"train.steps", Kind::Int, &c.train.steps},
      {"train.micro_batch_size", Kind::Int, &c.train.micro_batch_size},
      {"train.micro_batches", Kind::Int, &c.train.micro_batches},
      {"train.seed", Kind::Int64, &c.train.seed},
      {"train.lr", Kind::Double, &c.train.lr},
      {"train.min_lr", Kind::Double, &c.train.min_lr},
      {"train.warmup_steps", Kind::Int, &c.train.warmup_steps},
      {"train.decay_steps", Kind::Int, &c.train.decay_steps},
      {"train.weight_decay", Kind::Double, &c.train.weight_decay},
      {"train.beta1", Kind::Double, &c.train.beta1},
      {"train.beta2", Kind::Double, &c.train.beta2},
      {"train.eps", Kind::Double, &c.train.eps},
      {"train.grad_clip", Kind::Double, &c.train.grad_clip},
      {"train.max_steps_per_run", Kind::Int, &c.train.max_steps_per_run},
      {"train.stop_file", Kind::String, &c.train.stop_file},
      {"train.nonfinite", Kind::String, &c.train.nonfinite, {"stop", "skip", "rollback"}},
      {"train.nonfinite_max_consecutive", Kind::Int, &c.train.nonfinite_max_consecutive},
      {"train.loss_bound", Kind::Double, &c.train.loss_bound},
      {"train.gnorm_bound", Kind::Double, &c.train.gnorm_bound},
      {"train.spike_zscore", Kind::Double, &c.train.spike_zscore},
      {"train.spike_window", Kind::Int, &c.train.spike_window},
      {"train.watchdog_s", Kind::Double, &c.train.watchdog_s},
      {"parallel.tp", Kind::Int, &c.parallel.tp},
      {"parallel.pp", Kind::Int, &c.parallel.pp},
      {"parallel.dp", Kind::Int, &c.parallel.dp},
      {"train.precision", Kind::String, &c.train.precision, {"fp32", "bf16", "fp16"}},
      {"train.recompute", Kind::String, &c.train.recompute, {"none", "selective", "full"}},
      {"train.loss_scale", Kind::String, &c.train.loss_scale, {"auto", "dynamic", "none"}},
      {"train.loss_scale_initial", Kind::Double, &c.train.loss_scale_initial},
      {"train.loss_scale_min", Kind::Double, &c.train.loss_scale_min},
      {"train.loss_scale_growth", Kind::Double, &c.train.loss_scale_growth},
      {"train.loss_scale_backoff", Kind::Double, &c.train.loss_scale_backoff},
      {"train.loss_scale_window", Kind::Int, &c.train.loss_scale_window},
      {"train.loss_scale_hysteresis", Kind::Int, &c.train.loss_scale_hysteresis},
      {"parallel.schedule", Kind::String, &c.parallel.schedule, {"1f1b", "gpipe"}},
      {"parallel.allreduce", Kind::String, &c.parallel.allreduce, {"auto", "mpi", "ring", "shm"}},
      {"parallel.comm", Kind::String, &c.parallel.comm, {"auto", "mpi", "nccl"}},
      {"parallel.grad_reduce_dtype", Kind::String, &c.parallel.grad_reduce_dtype, {"fp32", "bf16"}},
      {"parallel.bucket_mb", Kind::Double, &c.parallel.bucket_mb},
      {"parallel.zero", Kind::Int, &c.parallel.zero},
      {"parallel.wte_chunk_rows", Kind::Int, &c.parallel.wte_chunk_rows},
      {"parallel.blas_threads", Kind::Int, &c.parallel.blas_threads},
      {"parallel.layout", Kind::String, &c.parallel.layout, {"manual", "auto"}},
      {"parallel.cluster", Kind::String, &c.parallel.cluster},
      {"parallel.rebalance", Kind::String, &c.parallel.rebalance, {"off", "auto"}},
      {"parallel.rebalance_after", Kind::Int, &c.parallel.rebalance_after},
      {"parallel.rebalance_gain", Kind::Double, &c.parallel.rebalance_gain},
      {"parallel.stage_blocks", Kind::String, &c.parallel.stage_blocks},
      {"data.source", Kind::String, &c.data.source, {"synthetic", "hdf5"}},
      {"data.path", Kind::String, &c.data.path},
      {"data.synthetic_noise", Kind::Double, &c.data.synthetic_noise},
      {"data.val_every", Kind::Int, &c.data.val_every},
      {"data.val_batches", Kind::Int, &c.data.val_batches},
      {"data.prefetch", Kind::Int, &c.data.prefetch},
      {"checkpoint.dir", Kind::String, &c.checkpoint.dir},
      {"checkpoint.every", Kind::Int, &c.checkpoint.every},
      {"checkpoint.keep", Kind::Int, &c.checkpoint.keep},
      {"checkpoint.resume", Kind::String, &c.checkpoint.resume},
      {"checkpoint.save_final", Kind::Bool, &c.checkpoint.save_final},
      {"output.dir", Kind::String, &c.output.dir},
      {"output.log_every", Kind::Int, &c.output.log_every},
      {"output.peak_gflops", Kind::Double, &c.output.peak_gflops},
      {"kernels.gemm", Kind::String, &c.kernels.gemm, {"auto", "onednn", "openblas"}},
      {"compress.method", Kind::String, &c.compress.method, {"none", "topk", "bf16", "fp16"}},
      {"compress.density", Kind::Double, &c.compress.density},
      {"compress.error_feedback", Kind::Bool, &c.compress.error_feedback},
      {"compress.warmup_steps", Kind::Int, &c.compress.warmup_steps},
      {"compress.select", Kind::String, &c.compress.select, {"sampled", "exact"}},
      {"compress.local_clip", Kind::Double, &c.compress.local_clip},
      {"compress.transport", Kind::String, &c.compress.transport, {"auto", "allgather", "shared_index"}},
      {"compress.values", Kind::String, &c.compress.values, {"fp32", "bf16", "fp16"}},
      {"sparsity.pattern", Kind::String, &c.sparsity.pattern, {"none", "2:4"}},
      {"sparsity.recipe", Kind::String, &c.sparsity.recipe, {"srste", "asp"}},
      {"sparsity.asp_step", Kind::Int, &c.sparsity.asp_step},
      {"sparsity.srste_decay", Kind::Double, &c.sparsity.srste_decay},
  };
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Strip a trailing `# comment` that is not inside a quoted string.
std::string strip_comment(const std::string& s) {
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' && (i == 0 || s[i - 1] != '\\')) in_str = !in_str;
    if (s[i] == '#' && !in_str) return s.substr(0, i);
  }
  return s;
}

// A string value holds no double quote: to_toml() writes strings as "..." without escapes (the deck reader
// knows none), and a quote followed by '#' came back from a run's config.toml as another value (the '#'
// started a comment; found by tests/fuzz/fuzz_overrides). Paths and names never need one.
void check_string_value(const Field& f, const std::string& v, const std::string& where) {
  if (v.find('"') != std::string::npos)
    throw Error(where + ": key '" + f.key + "' expects a string without double quotes, got '" + v + "'");
}

void assign(const Field& f, const std::string& raw_in, const std::string& where) {
  std::string raw = trim(raw_in);
  auto fail = [&](const char* want) {
    throw Error(where + ": key '" + f.key + "' expects " + want + ", got '" + raw + "'");
  };
  const bool quoted = raw.size() >= 2 && raw.front() == '"' && raw.back() == '"';
  switch (f.kind) {
    case Kind::Int:
    case Kind::Int64: {
      if (raw.empty() || quoted) fail("an integer");
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(raw.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE) fail("an integer");
      if (f.kind == Kind::Int) {
        if (v < -2147483647LL || v > 2147483647LL) fail("a 32-bit integer");
        *static_cast<int*>(f.ptr) = static_cast<int>(v);
      } else {
        *static_cast<int64_t*>(f.ptr) = static_cast<int64_t>(v);
      }
      break;
    }
    case Kind::Double: {
      if (raw.empty() || quoted) fail("a number");
      errno = 0;
      char* end = nullptr;
      double v = std::strtod(raw.c_str(), &end);
      if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) fail("a finite number");
      *static_cast<double*>(f.ptr) = v;
      break;
    }
    case Kind::Bool: {
      if (raw == "true") *static_cast<bool*>(f.ptr) = true;
      else if (raw == "false") *static_cast<bool*>(f.ptr) = false;
      else fail("true or false");
      break;
    }
    case Kind::String: {
      std::string v = raw;
      if (quoted) v = raw.substr(1, raw.size() - 2);
      else if (raw.find_first_of("\"=[]") != std::string::npos) fail("a string");
      check_string_value(f, v, where);
      *static_cast<std::string*>(f.ptr) = v;
      break;
    }
  }
}

std::string format(const Field& f) {
  std::ostringstream os;
  os.precision(17);
  switch (f.kind) {
    case Kind::Int: os << *static_cast<int*>(f.ptr); break;
    case Kind::Int64: os << *static_cast<int64_t*>(f.ptr); break;
    case Kind::Double: os << *static_cast<double*>(f.ptr); break;
    case Kind::Bool: os << (*static_cast<bool*>(f.ptr) ? "true" : "false"); break;
    case Kind::String: os << '"' << *static_cast<std::string*>(f.ptr) << '"'; break;
  }
  return os.str();
}

// A key with choices holds one of them: checked where the value comes in and again in validate() (for
// values set on the struct directly).
void check_choice(const Field& f, const std::string& where) {
  if (f.choices.empty()) return;
  const std::string& v = *static_cast<const std::string*>(f.ptr);
  std::string names;
  for (const std::string& c : f.choices) {
    if (v == c) return;
    names += (names.empty() ? "\"" : ", \"") + c + "\"";
  }
  throw Error(where + "config key '" + f.key + "' must be one of " + names + ", got \"" + v + "\"");
}

void set_key(Config& c, const std::string& key, const std::string& value, const std::string& where) {
  for (const Field& f : schema(c)) {
    if (f.key == key) {
      assign(f, value, where);
      check_choice(f, where + ": ");
      return;
    }
  }
  throw Error(where + ": unknown config key '" + key + "'");
}

}  // namespace

namespace {
// TOML allows no control characters but tab (a NUL or an escape byte in a deck is damage, not a value); a
// trailing CR of a CRLF file is accepted in a deck line (line_end), never in a command-line override, which has
// no line ending: there the CR would become part of the value and the run's config.toml would not load again
// (found by tests/fuzz/fuzz_overrides with "output.dir=a\r").
void check_characters(const std::string& line, const std::string& where, bool line_end = true) {
  for (size_t i = 0; i < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c < 0x20 && c != '\t' && !(line_end && c == '\r' && i + 1 == line.size())) || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      throw Error(where + ": control character " + buf + " at column " + std::to_string(i + 1) +
                  (line_end ? " (not allowed in a deck)" : " (not allowed in a command-line override)"));
    }
  }
}
}  // namespace

void Config::load_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("input deck '" + path + "' is a directory, not a file");
  std::ifstream in(path);
  if (!in) throw Error("cannot open input deck '" + path + "'");
  std::string line, section;
  // Where each key and section was first given: TOML makes a repeated key or table an error, and silently
  // letting the last one win (or merging the tables) hid typos and stale copies in long decks.
  std::map<std::string, int> key_line, section_line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno);
    check_characters(line, where);
    std::string s = trim(strip_comment(line));
    if (s.empty()) continue;
    if (s.front() == '[') {
      if (s.back() != ']') throw Error(where + ": malformed section header '" + s + "'");
      section = trim(s.substr(1, s.size() - 2));
      if (section.empty()) throw Error(where + ": empty section name");
      if (const auto it = section_line.find(section); it != section_line.end())
        throw Error(where + ": duplicate section [" + section + "] (first on line " + std::to_string(it->second) + ")");
      section_line[section] = lineno;
      continue;
    }
    size_t eq = s.find('=');
    if (eq == std::string::npos) throw Error(where + ": expected 'key = value', got '" + s + "'");
    std::string key = trim(s.substr(0, eq));
    if (key.empty()) throw Error(where + ": missing key before '='");
    if (!section.empty()) key = section + "." + key;
    if (const auto it = key_line.find(key); it != key_line.end())
      throw Error(where + ": duplicate key '" + key + "' (first set on line " + std::to_string(it->second) + ")");
    key_line[key] = lineno;
    set_key(*this, key, s.substr(eq + 1), where);
  }
  if (in.bad()) throw Error("cannot read input deck '" + path + "'");
}

void Config::set(const std::string& assignment, const std::string& origin) {
  check_characters(assignment, origin, false);
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(origin + ": expected section.key=value, got '" + assignment + "'");
  std::string value = assignment.substr(eq + 1);
  std::string key = trim(assignment.substr(0, eq));
  // Strings on the command line need no quotes.
  for (const Field& f : schema(*this))
    if (f.key == key && f.kind == Kind::String && (value.empty() || value.front() != '"')) {
      check_string_value(f, value, origin);
      *static_cast<std::string*>(f.ptr) = value;
      check_choice(f, origin + ": ");
      return;
    }
  set_key(*this, key, value, origin);
}

void Config::validate() const {
  auto positive = [](const char* key, double v) {
    if (!(v > 0)) throw Error(std::string("config key '") + key + "' must be positive, got " + std::to_string(v));
  };
  auto nonneg = [](const char* key, double v) {
    if (v < 0) throw Error(std::string("config key '") + key + "' must be >= 0, got " + std::to_string(v));
  };
  positive("model.n_layer", model.n_layer);
  positive("model.d_model", model.d_model);
  positive("model.n_head", model.n_head);
  positive("model.seq_len", model.seq_len);
  positive("model.vocab_size", model.vocab_size);
  positive("model.init_std", model.init_std);
  nonneg("model.n_kv_head", model.n_kv_head);
  nonneg("model.ffn_hidden", model.ffn_hidden);
  positive("model.rope_theta", model.rope_theta);
  positive("model.norm_eps", model.norm_eps);
  if (model.d_model % model.n_head != 0)
    throw Error("config: model.d_model (" + std::to_string(model.d_model) + ") is not divisible by model.n_head (" +
                std::to_string(model.n_head) + ")");
  positive("train.steps", train.steps);
  positive("train.micro_batch_size", train.micro_batch_size);
  positive("train.micro_batches", train.micro_batches);
  positive("train.lr", train.lr);
  nonneg("train.min_lr", train.min_lr);
  nonneg("train.warmup_steps", train.warmup_steps);
  nonneg("train.decay_steps", train.decay_steps);
  nonneg("train.weight_decay", train.weight_decay);
  if (!(train.beta1 >= 0 && train.beta1 < 1)) throw Error("config key 'train.beta1' must be in [0, 1)");
  if (!(train.beta2 >= 0 && train.beta2 < 1)) throw Error("config key 'train.beta2' must be in [0, 1)");
  positive("train.eps", train.eps);
  nonneg("train.grad_clip", train.grad_clip);
  nonneg("train.max_steps_per_run", train.max_steps_per_run);
  positive("train.nonfinite_max_consecutive", train.nonfinite_max_consecutive);
  nonneg("train.loss_bound", train.loss_bound);
  nonneg("train.gnorm_bound", train.gnorm_bound);
  nonneg("train.spike_zscore", train.spike_zscore);
  positive("train.spike_window", train.spike_window);
  nonneg("train.watchdog_s", train.watchdog_s);
  positive("parallel.tp", parallel.tp);
  positive("parallel.pp", parallel.pp);
  nonneg("parallel.dp", parallel.dp);
  positive("parallel.bucket_mb", parallel.bucket_mb);
  nonneg("parallel.wte_chunk_rows", parallel.wte_chunk_rows);
  positive("parallel.blas_threads", parallel.blas_threads);
  if (!parallel.cluster.empty() && parallel.layout != "auto")
    throw Error("config key 'parallel.cluster' is read only with parallel.layout = \"auto\"");
  positive("parallel.rebalance_after", parallel.rebalance_after);
  nonneg("parallel.rebalance_gain", parallel.rebalance_gain);
  if (!parallel.stage_blocks.empty()) {
    const std::vector<int> blocks = parallel.stage_block_counts();  // throws on a bad list
    int sum = 0;
    for (int b : blocks) sum += b;
    if (sum != model.n_layer)
      throw Error("config key 'parallel.stage_blocks' = \"" + parallel.stage_blocks + "\" adds up to " +
                  std::to_string(sum) + " blocks, the model has model.n_layer = " + std::to_string(model.n_layer));
  }
  Config copy = *this;
  for (const Field& f : schema(copy)) check_choice(f, "");
  // parallel.grad_reduce_dtype = bf16 and compress.method = bf16 are one wire path (src/train/half_wire.hpp).
  if (parallel.grad_reduce_dtype == "bf16" && compress.method != "none" && compress.method != "bf16")
    throw Error("config key 'parallel.grad_reduce_dtype' = \"bf16\" conflicts with compress.method = \"" +
                compress.method + "\" (the gradient all-reduce has one wire type)");
  positive("train.loss_scale_initial", train.loss_scale_initial);
  positive("train.loss_scale_min", train.loss_scale_min);
  if (train.loss_scale_min > train.loss_scale_initial)
    throw Error("config: train.loss_scale_min (" + std::to_string(train.loss_scale_min) +
                ") is above train.loss_scale_initial (" + std::to_string(train.loss_scale_initial) + ")");
  if (!(train.loss_scale_growth > 1)) throw Error("config key 'train.loss_scale_growth' must be > 1");
  if (!(train.loss_scale_backoff > 0 && train.loss_scale_backoff < 1))
    throw Error("config key 'train.loss_scale_backoff' must be in (0, 1)");
  positive("train.loss_scale_window", train.loss_scale_window);
  positive("train.loss_scale_hysteresis", train.loss_scale_hysteresis);
  if (parallel.zero < 0 || parallel.zero > 3)
    throw Error("config key 'parallel.zero' must be 0, 1, 2 or 3, got " + std::to_string(parallel.zero));
  if (data.source == "hdf5" && data.path.empty()) throw Error("config: data.source = \"hdf5\" needs data.path");
  if (!(data.synthetic_noise >= 0 && data.synthetic_noise <= 1))
    throw Error("config key 'data.synthetic_noise' must be in [0, 1]");
  nonneg("data.val_every", data.val_every);
  positive("data.val_batches", data.val_batches);
  nonneg("data.prefetch", data.prefetch);
  nonneg("checkpoint.every", checkpoint.every);
  positive("checkpoint.keep", checkpoint.keep);
  positive("output.log_every", output.log_every);
  nonneg("output.peak_gflops", output.peak_gflops);
  if (output.dir.empty()) throw Error("config key 'output.dir' must not be empty");
  if (!(compress.density > 0 && compress.density <= 1))
    throw Error("config key 'compress.density' must be in (0, 1], got " + std::to_string(compress.density));
  nonneg("compress.warmup_steps", compress.warmup_steps);
  nonneg("compress.local_clip", compress.local_clip);
  if (compress.values != "fp32" && compress.method != "topk")
    throw Error("config key 'compress.values' = \"" + compress.values + "\" applies to compress.method = \"topk\" only "
                "(the dense 16-bit all-reduce is compress.method = bf16 | fp16)");
  nonneg("sparsity.asp_step", sparsity.asp_step);
  nonneg("sparsity.srste_decay", sparsity.srste_decay);
  // 2:4 groups run along each linear layer's input dimension, which TP splits for attn.proj and mlp.proj:
  // every TP rank must hold whole groups (its d_model/tp input columns a multiple of 4).
  if (sparsity.pattern == "2:4" && model.d_model % (4 * parallel.tp) != 0)
    throw Error("config key 'sparsity.pattern' = \"2:4\" needs model.d_model (" + std::to_string(model.d_model) +
                ") divisible by 4 x parallel.tp (" + std::to_string(4 * parallel.tp) +
                ") so that every TP rank holds whole groups of 4 input columns");
}

std::vector<int> ParallelConfig::stage_block_counts() const {
  std::vector<int> out;
  std::stringstream ss(stage_blocks);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // strtol's end pointer points into the string it parsed: keep that string alive (a temporary's c_str() was
    // read after its destruction; ASan found it through fuzz_overrides with "parallel.stage_blocks==p")
    const std::string text = trim(item);
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 1)
      throw Error("config key 'parallel.stage_blocks' expects blocks per stage, each at least 1, as \"3,2,2\"; got \"" +
                  stage_blocks + "\"");
    out.push_back(int(v));
  }
  return out;
}

Recompute Config::recompute() const {
  return train.recompute == "full" ? Recompute::Full : train.recompute == "selective" ? Recompute::Selective
                                                                                      : Recompute::None;
}

Precision Config::precision() const {
  return train.precision == "bf16" ? Precision::BF16 : train.precision == "fp16" ? Precision::F16 : Precision::F32;
}

bool Config::dynamic_loss_scale() const {
  return train.loss_scale == "dynamic" || (train.loss_scale == "auto" && precision() == Precision::F16);
}

std::map<std::string, std::string> Config::to_map() const {
  std::map<std::string, std::string> m;
  Config copy = *this;
  for (const Field& f : schema(copy)) m[f.key] = format(f);
  return m;
}

std::string Config::to_toml() const {
  // One [section] per section, in order of first appearance: the schema interleaves sections (keys are grouped
  // by feature), and the strict deck reader rejects a repeated section, so a run's config.toml must not have one.
  std::vector<std::string> order;
  std::map<std::string, std::ostringstream> body;
  Config copy = *this;
  for (const Field& f : schema(copy)) {
    size_t dot = f.key.find('.');
    std::string sec = f.key.substr(0, dot);
    if (!body.count(sec)) order.push_back(sec);
    body[sec] << f.key.substr(dot + 1) << " = " << format(f) << "\n";
  }
  std::ostringstream os;
  for (size_t i = 0; i < order.size(); ++i) os << (i ? "\n" : "") << "[" << order[i] << "]\n" << body[order[i]].str();
  return os.str();
}

std::vector<std::string> Config::keys() {
  Config c;
  std::vector<std::string> k;
  for (const Field& f : schema(c)) k.push_back(f.key);
  return k;
}

std::string resolve_deck(const std::string& name) {
  struct stat st;
  if (name.find('/') != std::string::npos || name.find(".toml") != std::string::npos) return name;
  const char* env = std::getenv("GRIDTRAIN_INPUTS");
  std::vector<std::string> dirs;
  if (env) dirs.push_back(env);
#ifdef GRIDTRAIN_INPUTS_DIR
  dirs.push_back(GRIDTRAIN_INPUTS_DIR);
#endif
  dirs.push_back("inputs");
  for (const auto& d : dirs) {
    std::string p = d + "/" + name + ".toml";
    if (stat(p.c_str(), &st) == 0) return p;
  }
  throw Error("unknown preset '" + name + "': no " + name + ".toml in the inputs directory");
}

}  // namespace gt
