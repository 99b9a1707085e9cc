#pragma once
// Start-up checks of the directories a training run writes to, and the lock that keeps two runs out of one
// checkpoint directory. Found at the first save, a read-only or full directory cost the whole run's training
// time; two runs sharing a directory raced on `latest` and pruned each other's files.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace gt::io {

// Collective. Rank 0 creates each directory, writes and removes a probe file in it, and (when
// checkpoint_bytes > 0) compares the free space of ckpt_dir with one checkpoint's size (checkpoint_file_bytes of
// src/io/checkpoint_space.hpp: the size every save reserves). Throws gt::Error (on
// every rank) "<dir>: not writable: ..." / "<dir>: N MiB free but one checkpoint of this model needs M MiB ...".
void check_run_dirs(MPI_Comm comm, const std::string& output_dir, const std::string& ckpt_dir,
                    int64_t checkpoint_bytes);

// <dir>/lock, held by rank 0 for the object's lifetime: "host=H pid=P". A lock whose owner is a dead process
// on this host, or whose heartbeat (the owner touches it every kHeartbeatSeconds) stopped for
// kStaleSeconds, is taken over with a warning; a live one is an error naming host and PID. Collective.
class RunDirLock {
 public:
  static constexpr int kHeartbeatSeconds = 10;
  static constexpr int kStaleSeconds = 60;
  RunDirLock(MPI_Comm comm, const std::string& dir);
  ~RunDirLock();  // stops the heartbeat and removes the lock if it is still ours
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  void acquire();  // rank 0
  void heartbeat();

  std::string path_, content_;
  bool held_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread beat_;
};

}  // namespace gt::io
