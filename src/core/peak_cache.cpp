#include "src/core/peak_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

namespace gt {
namespace {

std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k != key) continue;
    size_t v = colon + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    return line.substr(v);
  }
  return "";
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Tabs and newlines would break the line format; the fields that could hold them (cpu, host) get spaces.
std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

bool parse_line(const std::string& line, PeakRecord& r) {
  std::vector<std::string> f;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, '\t')) f.push_back(field);
  if (f.size() != 7) return false;
  char* end = nullptr;
  r = PeakRecord{f[0], f[1], std::strtod(f[2].c_str(), &end), f[3], f[4], std::atoi(f[5].c_str()),
                 std::atoi(f[6].c_str())};
  return end != f[2].c_str() && r.gflops > 0;
}

std::vector<PeakRecord> read_all(const std::string& path) {
  std::vector<PeakRecord> out;
  std::ifstream in(path);
  std::string line;
  PeakRecord r;
  while (std::getline(in, line))
    if (parse_line(line, r)) out.push_back(r);
  return out;
}

// mkdir -p of the file's directory; errors show up when the file is written.
void make_parent_dirs(const std::string& path) {
  for (size_t p = path.find('/', 1); p != std::string::npos; p = path.find('/', p + 1))
    ::mkdir(path.substr(0, p).c_str(), 0755);
}

bool write_all(const std::string& path, const std::vector<PeakRecord>& recs, std::string* error) {
  make_parent_dirs(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const PeakRecord& r : recs) {
      char gflops[64];
      std::snprintf(gflops, sizeof gflops, "%.3f", r.gflops);  // GFLOP/s to the MFLOP/s
      out << clean(r.cpu) << '\t' << clean(r.isa) << '\t' << gflops << '\t' << r.measured_at << '\t'
          << clean(r.host) << '\t' << r.trials << '\t' << r.runs << '\n';
    }
    out.flush();
    if (!out) {
      if (error) *error = "cannot write '" + tmp + "': " + std::strerror(errno);
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string cpu_identity() {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str(), name = cpuinfo_field(text, "model name");
  if (name.empty()) return "unknown cpu";
  return clean(name) + " (family " + cpuinfo_field(text, "cpu family") + " model " + cpuinfo_field(text, "model") +
         " stepping " + cpuinfo_field(text, "stepping") + ")";
}

std::string peak_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/gridtrain/peak_flops.tsv";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/gridtrain/peak_flops.tsv";
  return "";
}

PeakRecord read_peak_record(const std::string& path, const std::string& cpu, const std::string& isa) {
  for (const PeakRecord& r : read_all(path))
    if (r.cpu == clean(cpu) && r.isa == clean(isa)) return r;
  PeakRecord none;
  none.cpu = cpu, none.isa = isa;
  return none;
}

PeakRecord merge_peak_record(const std::string& path, const PeakRecord& measured, std::string* write_error) {
  std::vector<PeakRecord> recs = read_all(path);
  PeakRecord* cached = nullptr;
  for (PeakRecord& r : recs)
    if (r.cpu == clean(measured.cpu) && r.isa == clean(measured.isa)) cached = &r;
  PeakRecord fresh = measured;
  fresh.measured_at = utc_now();
  if (!cached) {
    fresh.runs = 1;
    recs.push_back(fresh);
  } else if (measured.gflops > cached->gflops) {
    fresh.runs = cached->runs + 1;
    *cached = fresh;
  } else {
    cached->runs += 1;
    fresh = *cached;
  }
  const PeakRecord result = cached ? *cached : fresh;
  if (!path.empty()) write_all(path, recs, write_error);
  else if (write_error) *write_error = "neither XDG_CACHE_HOME nor HOME is set";
  return result;
}

std::string describe_peak_record(const PeakRecord& r, const std::string& path) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "the best of %d run%s (each the best of %d trials)", r.runs, r.runs == 1 ? "" : "s",
                r.trials);
  return std::string(buf) + ", measured " + r.measured_at + " on " + r.host +
         (path.empty() ? ", not cached" : ", cache " + path);
}

}  // namespace gt
