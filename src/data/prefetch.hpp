#pragma once
// Reads the next batch in the background while the current one trains.
//   prefetcher.request(Split::Train, samples_of_next_batch);   // returns at once
//   ... compute ...
//   prefetcher.take(tokens);                                   // waits, copies rows (row_elems() words each)
// Requests are served in order; at most `depth` may be outstanding (not yet taken). depth = 0 reads
// synchronously inside take() (no thread). HDF5 is not thread-safe: call quiesce() before any other HDF5 use
// in the process (checkpoint writes), which waits until no read is in flight (queued requests then stay
// unread until the next request() or take()).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "src/data/data_source.hpp"

namespace gt {

class BatchPrefetcher {
 public:
  BatchPrefetcher(DataSource& source, int depth);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  void request(Split split, std::vector<int64_t> samples);
  // out: rows of the oldest request, samples.size() * row_elems() words. Rethrows the read's gt::Error.
  void take(int32_t* out);
  void quiesce();
  int outstanding() const;

 private:
  struct Job {
    Split split;
    std::vector<int64_t> samples;
    std::vector<int32_t> tokens;  // the spare buffer the worker fills
    bool done = false;
    std::exception_ptr error;
  };
  void worker();
  void run(Job& job);

  DataSource& src_;
  int depth_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool paused_ = false, stop_ = false, busy_ = false;
  std::thread thread_;
};

}  // namespace gt
