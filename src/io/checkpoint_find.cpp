// resume=auto: which checkpoint a run continues from. `latest` is the commit record and is trusted only when it
// names an existing checkpoint file of this directory; every rejected choice is said in one warning line, and a
// directory whose checkpoints are all invalid is an error rather than a fresh start over them.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/checkpoint_files.hpp"
#include "src/io/checkpoint_verify.hpp"

namespace fs = std::filesystem;

namespace gt {

namespace {

// Modification time in ns; a file that cannot be stat'ed sorts last (its verification will say why).
int64_t mtime_ns(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return INT64_MIN;
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// A text fit for one warning line: non-printable bytes as \xNN, at most 40 characters.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return s.size() > 40 ? out + "..." : out;
}

struct Candidates {
  std::vector<std::string> paths;  // in the order to try
  std::string latest_problem;      // why `latest` was not used ("" when it names the first candidate)
  bool latest_exists = false;
};

// Rank 0: the file `latest` names when it is a checkpoint file of dir, then every step_*.h5 most recently
// written first. Write order, not step order: after a restart from an older checkpoint the abandoned run's
// files carry larger step numbers but were written earlier, so with a damaged `latest` the newest step would
// silently continue the wrong history.
Candidates list_candidates(const std::string& dir) {
  Candidates c;
  std::vector<io::CheckpointFile> files = io::list_checkpoints(dir);
  std::vector<std::pair<int64_t, std::string>> by_time;
  for (const io::CheckpointFile& f : files) by_time.push_back({mtime_ns(f.path), f.path});
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

  const std::string latest_path = (fs::path(dir) / "latest").string();
  std::error_code ec;
  c.latest_exists = fs::exists(latest_path, ec);
  std::string first;
  if (!c.latest_exists) {
    if (!files.empty()) c.latest_problem = latest_path + " is missing";
  } else {
    const std::string text = io::read_small_file(latest_path);
    if (text.empty()) {
      c.latest_problem = latest_path + " is empty";
    } else if (!io::parse_checkpoint_name(text)) {
      c.latest_problem = latest_path + " does not name a checkpoint file (it holds '" + printable(text) + "')";
    } else if (!fs::is_regular_file(fs::path(dir) / text, ec)) {
      c.latest_problem = latest_path + " names " + text + ", which does not exist";
    } else {
      first = (fs::path(dir) / text).string();
      c.paths.push_back(first);
    }
  }
  for (const auto& [t, p] : by_time)
    if (p != first) c.paths.push_back(p);
  return c;
}

std::string broadcast_lines(MPI_Comm comm, const std::vector<std::string>& lines, int rank) {
  std::string text;
  if (rank == 0)
    for (const std::string& l : lines) text += l + '\n';
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  text.resize(len);
  MPI_Bcast(text.data(), len, MPI_CHAR, 0, comm);
  return text;
}

}  // namespace

std::optional<std::string> find_latest_checkpoint(MPI_Comm comm, const std::string& dir,
                                                  const CheckpointRequirements& req) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rank 0 decides the candidates so that every rank tries the same files in the same order.
  Candidates c;
  if (rank == 0) c = list_candidates(dir);
  int latest_exists = c.latest_exists;
  MPI_Bcast(&latest_exists, 1, MPI_INT, 0, comm);
  const std::string list = broadcast_lines(comm, c.paths, rank);

  std::vector<std::string> rejected;  // "step_X.h5: reason", the same on every rank (errors are agreed)
  size_t p = 0;
  while (p < list.size()) {
    const size_t nl = list.find('\n', p);
    const std::string path = list.substr(p, nl - p);
    p = nl + 1;
    try {
      // A crash or hang of libhdf5 on damaged metadata is caught in a child process, so it is one more reason
      // to skip the file instead of the end of the run.
      io::check_hdf5_survives(comm, path);
      verify_checkpoint(comm, path, req);
    } catch (const Error& e) {
      std::string reason = e.what();
      if (reason.rfind(path + ": ", 0) == 0) reason = reason.substr(path.size() + 2);
      if (rank == 0) std::cerr << "gridtrain: warning: skipping invalid checkpoint " << path << ": " << reason << std::endl;
      rejected.push_back(fs::path(path).filename().string() + ": " + reason);
      continue;
    }
    if (rank == 0 && (!c.latest_problem.empty() || !rejected.empty()))
      std::cerr << "gridtrain: warning: " << (c.latest_problem.empty() ? "" : c.latest_problem + "; ")
                << "falling back to " << path << " (the most recently written valid checkpoint)" << std::endl;
    return path;
  }
  if (rejected.empty() && !latest_exists) return std::nullopt;  // nothing was ever saved here: a fresh start
  std::string what;
  for (size_t i = 0; i < rejected.size() && i < 3; ++i) what += (i ? "; " : "") + rejected[i];
  if (rejected.size() > 3) what += "; and " + std::to_string(rejected.size() - 3) + " more";
  if (rejected.empty()) what = "a 'latest' record but no checkpoint file";
  throw Error(dir + ": no valid checkpoint to resume from (" + what +
              "); refusing to start fresh over them: inspect them (gridtrain inspect FILE), move them away, or set "
              "checkpoint.resume=none to start a new run");
}

}  // namespace gt
