#include "src/io/run_dirs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "src/core/error.hpp"
#include "src/io/agree.hpp"
#include "src/io/checkpoint_files.hpp"
#include "src/io/checkpoint_space.hpp"

namespace fs = std::filesystem;

namespace gt::io {

namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Creates dir and proves that a file can be written, synced and removed there. The reason is create_directories'
// own: the is_directory check after it used to overwrite it, so a read-only file system was reported as "No such
// file or directory".
void probe_dir(const std::string& dir) {
  std::error_code created, ec;
  fs::create_directories(dir, created);
  if (!fs::is_directory(dir, ec))
    throw Error(dir + ": cannot create directory" +
                (created ? ": " + created.message() : std::string(" (a file is in the way)")));
  const std::string probe = (fs::path(dir) / (".gridtrain_probe." + std::to_string(getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(dir + ": not writable: " + std::strerror(errno));
  const bool ok = ::write(fd, "x", 1) == 1 && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!ok) throw Error(dir + ": cannot write a file: " + std::strerror(err));
}

int64_t mtime_s(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_mtime) : -1;
}

// Now by the clock of the file system that holds dir (a node's clock may differ from the file server's).
int64_t fs_now(const std::string& dir) {
  const std::string probe = (fs::path(dir) / (".gridtrain_clock." + std::to_string(getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) ::close(fd);
  const int64_t t = mtime_s(probe);
  ::unlink(probe.c_str());
  return t >= 0 ? t : int64_t(time(nullptr));
}

struct Owner {
  std::string host;
  long pid = 0;
  bool parsed = false;
};

Owner parse_owner(const std::string& text) {
  Owner o;
  char host[256] = {0};
  if (std::sscanf(text.c_str(), "host=%255s pid=%ld", host, &o.pid) == 2 && o.pid > 0) {
    o.host = host;
    o.parsed = true;
  }
  return o;
}

}  // namespace

void check_run_dirs(MPI_Comm comm, const std::string& output_dir, const std::string& ckpt_dir,
                    int64_t checkpoint_bytes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  run_agreed(comm, [&] {
    if (rank != 0) return;
    probe_dir(output_dir);
    probe_dir(ckpt_dir);
    const int64_t free_b = checkpoint_bytes > 0 ? free_bytes(ckpt_dir) : -1;  // -1: cannot tell, the save will say
    if (free_b >= 0 && free_b < checkpoint_bytes)
      throw Error(ckpt_dir + ": " + mib_text(double(free_b)) + " free but one checkpoint of this model needs " +
                  mib_text(double(checkpoint_bytes)) + " (free space there or set checkpoint.dir)");
  });
}

RunDirLock::RunDirLock(MPI_Comm comm, const std::string& dir) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  path_ = (fs::path(dir) / "lock").string();
  run_agreed(comm, [&] {
    if (rank == 0) acquire();
  });
  if (held_) beat_ = std::thread([this] { heartbeat(); });
}

void RunDirLock::acquire() {
  content_ = "host=" + host_name() + " pid=" + std::to_string(getpid()) + "\n";
  const std::string dir = fs::path(path_).parent_path().string();
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const bool ok = ::write(fd, content_.data(), content_.size()) == ssize_t(content_.size());
      ::close(fd);
      if (!ok) throw Error(path_ + ": cannot write the lock file: " + std::strerror(errno));
      held_ = true;
      return;
    }
    if (errno != EEXIST) throw Error(path_ + ": cannot create the lock file: " + std::strerror(errno));
    const std::string text = read_small_file(path_);
    const Owner o = parse_owner(text);
    std::string stale;  // why the existing lock may be taken over ("" = its owner may be alive)
    if (!o.parsed) {
      if (attempt < 3) {  // another run may be between creating and writing it
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      stale = "an unreadable lock file ('" + text.substr(0, 40) + "')";
    } else if (o.host == host_name()) {
      if (::kill(static_cast<pid_t>(o.pid), 0) != 0 && errno == ESRCH)
        stale = "a lock of process " + std::to_string(o.pid) + " on this host, which no longer exists";
    } else {
      // Another node: its owner is alive while its heartbeat goes on. Wait long enough to see one.
      const int64_t seen = mtime_s(path_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kStaleSeconds + kHeartbeatSeconds);
      while (fs_now(dir) - mtime_s(path_) < kStaleSeconds && mtime_s(path_) == seen &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::seconds(2));
      if (mtime_s(path_) == seen && fs_now(dir) - seen >= kStaleSeconds)
        stale = "a lock of process " + std::to_string(o.pid) + " on host " + o.host + " whose heartbeat stopped " +
                std::to_string(fs_now(dir) - seen) + " s ago";
    }
    if (stale.empty())
      throw Error(dir + ": in use by another run (process " + std::to_string(o.pid) + " on host " + o.host +
                  ", lock file " + path_ + "); use another checkpoint.dir, or remove the lock if that run is gone");
    if (attempt >= 5) throw Error(path_ + ": cannot take over the stale lock file");
    // Replace it atomically, then check that no other run replaced it at the same time.
    const std::string tmp = path_ + "." + std::to_string(getpid()) + ".tmp";
    write_file_atomic(dir, fs::path(tmp).filename().string(), content_);
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) throw Error(path_ + ": cannot replace: " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (read_small_file(path_) + "\n" != content_) continue;  // someone else won: look at their lock
    std::cerr << "gridtrain: warning: took over " << path_ << ": " << stale << std::endl;
    held_ = true;
    return;
  }
}

void RunDirLock::heartbeat() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::seconds(kHeartbeatSeconds), [this] { return stop_; }))
    ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);  // best effort: a missed beat only delays nothing
}

RunDirLock::~RunDirLock() {
  if (beat_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    beat_.join();
  }
  if (held_ && read_small_file(path_) + "\n" == content_) ::unlink(path_.c_str());
}

}  // namespace gt::io
