// Config from text: the deck file and `section.key=value` overrides, each value checked against its row of the
// key table (config_schema.hpp); the list-valued keys; a run's config.toml and flat map; preset names.
#include "src/core/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "src/core/config_schema.hpp"
#include "src/core/deck.hpp"
#include "src/core/error.hpp"

namespace gt {
using namespace config_schema;
namespace {

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


void Config::load_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("input deck '" + path + "' is a directory, not a file");
  std::ifstream in(path);
  if (!in) throw Error("cannot open input deck '" + path + "'");
  for (const DeckEntry& e : read_deck(in, path)) set_key(*this, e.key, e.value, e.where);
}

void Config::set(const std::string& assignment, const std::string& origin) {
  deck_check_characters(assignment, origin, false);
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

namespace {
// A config key's comma-separated list of numbers, each at least `min` and at most a million (whole numbers unless
// `real`); the error names the key, what it expects and the value given.
std::vector<double> number_list(const char* key, const std::string& text, const char* expects, double min, bool real) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // strtol's end pointer points into the string it parsed: keep that string alive (a temporary's c_str() was
    // read after its destruction; ASan found it through fuzz_overrides with "parallel.stage_blocks==p")
    const std::string t = trim(item);
    char* end = nullptr;
    const double v = real ? std::strtod(t.c_str(), &end) : double(std::strtol(t.c_str(), &end, 10));
    if (t.empty() || *end != '\0' || !(v >= min) || v > 1e6)
      throw Error(std::string("config key '") + key + "' expects " + expects + "; got \"" + text + "\"");
    out.push_back(v);
  }
  return out;
}

std::vector<int> whole_numbers(const std::vector<double>& v) { return std::vector<int>(v.begin(), v.end()); }
}  // namespace

std::vector<int> ParallelConfig::dp_share_counts() const {
  return whole_numbers(number_list("parallel.dp_shares", dp_shares,
                                   "micro-batches per DP replica, each at least 1, as \"3,1\"", 1, false));
}

std::vector<int> ParallelConfig::stage_block_counts() const {
  return whole_numbers(number_list("parallel.stage_blocks", stage_blocks,
                                   "blocks per stage, each at least 1, as \"3,2,2\"", 1, false));
}

std::vector<double> TrainConfig::lr_milestone_points() const {
  return number_list("train.lr_milestones", lr_milestones, "ascending points, each at least 0, as \"30,60,80\"", 0,
                     true);
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
