#pragma once
// File-system side of checkpoints: names, durable renames, the `latest` pointer, pruning. Rank-local
// (no MPI); callers run these on one rank and agree on the outcome. Errors throw gt::Error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gt::io {

std::string checkpoint_file_name(int64_t step);  // "step_00000010.h5"

// Step of a name that matches step_<8+ digits>.h5 exactly; empty otherwise. With tmp, matches the
// ".h5.tmp" form instead.
std::optional<int64_t> parse_checkpoint_name(const std::string& name, bool tmp = false);

struct CheckpointFile {
  int64_t step;
  std::string path;
};
// Checkpoint files in dir, newest step first (empty if dir does not exist).
std::vector<CheckpointFile> list_checkpoints(const std::string& dir);

void fsync_path(const std::string& path);  // file or directory
// rename(from, to) then fsync the directory, so that the new name survives a power loss.
void durable_rename(const std::string& from, const std::string& to, const std::string& dir);
// Writes text to <dir>/<name> through <name>.tmp, fsync and rename.
void write_file_atomic(const std::string& dir, const std::string& name, const std::string& text);
// The same for a path (summary.json, config.toml): one implementation, so a report is as durable as `latest`.
void write_file_atomic(const std::string& path, const std::string& text);
// The two halves of write_file_atomic: a save writes `latest`'s new text (<name>.tmp, synced) before the
// checkpoint's own bytes, so that committing it after the checkpoint's rename allocates nothing on a disk
// that has filled meanwhile.
void stage_file_atomic(const std::string& dir, const std::string& name, const std::string& text);
void commit_file_atomic(const std::string& dir, const std::string& name);
// Contents of a small text file without trailing whitespace; empty if it does not exist.
std::string read_small_file(const std::string& path);

// Keeps `protect` (the checkpoint just written) and the newest keep-1 checkpoints of smaller step and removes
// the older ones (keep <= 0: keep all); files of a larger step are never touched. Removes stale
// step_*.h5.tmp files other than protect + ".tmp". Only names that match the checkpoint pattern are touched.
void prune_checkpoints(const std::string& dir, int keep, const std::string& protect);

}  // namespace gt::io
