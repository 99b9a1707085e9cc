#include "src/data/prefetch.hpp"

#include <algorithm>

#include "src/core/error.hpp"

namespace gt {

BatchPrefetcher::BatchPrefetcher(DataSource& source, int depth) : src_(source), depth_(std::max(0, depth)) {
  if (depth_ > 0) thread_ = std::thread([this] { worker(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BatchPrefetcher::run(Job& job) {
  try {
    job.tokens.resize(job.samples.size() * size_t(src_.row_elems()));
    src_.read(job.split, job.samples.data(), int(job.samples.size()), job.tokens.data());
  } catch (...) {
    job.error = std::current_exception();
  }
}

void BatchPrefetcher::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    Job* next = nullptr;
    cv_.wait(lock, [&] {
      if (stop_) return true;
      if (paused_) return false;
      for (Job& j : jobs_)
        if (!j.done) { next = &j; return true; }
      return false;
    });
    if (stop_) return;
    busy_ = true;
    lock.unlock();
    run(*next);  // deque elements stay put while others are pushed at the back or the front one is popped
    lock.lock();
    next->done = true;  // set under the lock: take() reads it in its wait predicate
    busy_ = false;
    cv_.notify_all();
  }
}

void BatchPrefetcher::request(Split split, std::vector<int64_t> samples) {
  std::unique_lock<std::mutex> lock(mu_);
  if (int(jobs_.size()) >= std::max(1, depth_))
    throw Error("prefetch: more than " + std::to_string(std::max(1, depth_)) + " requests outstanding (take first)");
  jobs_.push_back(Job{split, std::move(samples), {}, false, nullptr});
  paused_ = false;
  lock.unlock();
  cv_.notify_all();
}

void BatchPrefetcher::take(int32_t* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (jobs_.empty()) throw Error("prefetch: take() without a request");
  if (depth_ == 0) {
    run(jobs_.front());
    jobs_.front().done = true;
  } else {
    paused_ = false;
    cv_.notify_all();
    cv_.wait(lock, [&] { return jobs_.front().done; });
  }
  Job job = std::move(jobs_.front());
  jobs_.pop_front();
  lock.unlock();
  if (job.error) std::rethrow_exception(job.error);
  std::copy(job.tokens.begin(), job.tokens.end(), out);
}

void BatchPrefetcher::quiesce() {
  std::unique_lock<std::mutex> lock(mu_);
  paused_ = true;  // no new read starts until the next request() or take()
  cv_.wait(lock, [&] { return !busy_; });
}

int BatchPrefetcher::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(jobs_.size());
}

}  // namespace gt
