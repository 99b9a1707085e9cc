#include "src/io/checkpoint_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/error.hpp"

namespace fs = std::filesystem;

namespace gt::io {

std::string checkpoint_file_name(int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "step_%08lld.h5", static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> parse_checkpoint_name(const std::string& name, bool tmp) {
  const std::string prefix = "step_", suffix = tmp ? ".h5.tmp" : ".h5";
  if (name.size() < prefix.size() + 8 + suffix.size()) return std::nullopt;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

std::vector<CheckpointFile> list_checkpoints(const std::string& dir) {
  std::vector<CheckpointFile> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (auto step = parse_checkpoint_name(name)) out.push_back({*step, entry.path().string()});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.step != b.step ? a.step > b.step : a.path > b.path;
  });
  return out;
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(path + ": cannot open for fsync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems refuse fsync on directories (EINVAL); the rename is then as durable as it gets.
  if (rc != 0 && !(err == EINVAL && fs::is_directory(path)))
    throw Error(path + ": fsync failed: " + std::strerror(err));
}

void durable_rename(const std::string& from, const std::string& to, const std::string& dir) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw Error(to + ": cannot rename from " + from + ": " + std::strerror(errno));
  fsync_path(dir);
}

void stage_file_atomic(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string tmp = (fs::path(dir) / name).string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp + ": cannot create: " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    throw Error(tmp + ": cannot write: " + std::strerror(ok ? errno : err));
  }
}

void commit_file_atomic(const std::string& dir, const std::string& name) {
  const std::string path = (fs::path(dir) / name).string();
  durable_rename(path + ".tmp", path, dir);
}

void write_file_atomic(const std::string& dir, const std::string& name, const std::string& text) {
  stage_file_atomic(dir, name, text);
  commit_file_atomic(dir, name);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const fs::path p(path);
  write_file_atomic(p.has_parent_path() ? p.parent_path().string() : ".", p.filename().string(), text);
}

std::string read_small_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

void prune_checkpoints(const std::string& dir, int keep, const std::string& protect) {
  std::error_code ec;
  const std::string protect_name = fs::path(protect).filename().string();
  const std::optional<int64_t> protect_step = parse_checkpoint_name(protect_name);
  if (keep > 0 && protect_step) {
    // Only files older than the checkpoint just written (and verified) are candidates: a file with a larger
    // step belongs to another history (a run restarted from an older checkpoint) and was never validated by
    // this run, so it is left for the user to inspect rather than deleted.
    int kept = 1;  // protect itself
    for (const CheckpointFile& c : list_checkpoints(dir)) {
      if (c.step >= *protect_step) continue;
      if (kept < keep) {
        ++kept;
        continue;
      }
      fs::remove(c.path, ec);  // best effort: a file we cannot remove is only wasted space
    }
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (parse_checkpoint_name(name, /*tmp=*/true) && name != protect_name + ".tmp") fs::remove(entry.path(), ec);
  }
}

}  // namespace gt::io
