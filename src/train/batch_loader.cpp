#include "src/train/batch_loader.hpp"
#include "src/train/dp/dp_shares.hpp"

#include <mpi.h>

#include "src/core/error.hpp"

namespace gt {

BatchLoader::BatchLoader(const Config& cfg, std::unique_ptr<DataSource> data, int dp_rank, int dp_size,
                         bool reads_samples)
    : cfg_(cfg),
      dp_rank_(dp_rank),
      global_batch_(int64_t(cfg.train.micro_batch_size) * cfg.train.micro_batches * dp_size),
      local_m_(dp::replica_micro_batches(cfg, dp_rank)),
      first_micro_(dp::replica_first_micro(cfg, dp_rank)),
      data_(std::move(data)) {
  if (cfg_.data.prefetch > 0 && reads_samples)
    prefetch_ = std::make_unique<BatchPrefetcher>(*data_, cfg_.data.prefetch + 1);
}

BatchLoader::~BatchLoader() = default;

int64_t BatchLoader::first_sample(int64_t samples_done, int m) const {
  const int64_t B = cfg_.train.micro_batch_size;
  return samples_done + (first_micro_ + m) * B;  // parallel.dp_shares: this replica's contiguous run
}

void BatchLoader::restart_at(int64_t samples_done) {
  req_samples_done_ = samples_done;
  req_m_ = 0;
  req_first_.clear();
}

void BatchLoader::set_shares(const std::vector<int>& shares, int64_t samples_done) {
  if (prefetch_) {  // requests already issued for the old share: taken in order and dropped
    std::vector<int32_t> scratch(size_t(cfg_.train.micro_batch_size) * size_t(data_->row_elems()));
    while (prefetch_->outstanding() > 0) prefetch_->take(scratch.data());
  }
  local_m_ = shares[size_t(dp_rank_)];
  first_micro_ = dp::share_offset(shares, dp_rank_);
  restart_at(samples_done);
}

// Keeps data.prefetch training micro-batches requested ahead of the one being consumed (requests are served
// and taken in order: micro-batches 0..M-1 of this step, then of the next).
void BatchLoader::request_ahead() {
  const int B = cfg_.train.micro_batch_size;
  while (prefetch_->outstanding() < cfg_.data.prefetch + 1) {
    std::vector<int64_t> samples(B);
    const int64_t first = first_sample(req_samples_done_, req_m_);
    for (int b = 0; b < B; ++b) samples[b] = first + b;
    prefetch_->request(Split::Train, std::move(samples));
    req_first_.push_back(first);
    if (++req_m_ == local_m_) {
      req_m_ = 0;
      req_samples_done_ += global_batch_;
    }
  }
}

void BatchLoader::load(Split split, int64_t first) {
  const int B = cfg_.train.micro_batch_size;
  rows_.resize(size_t(B) * size_t(data_->row_elems()));
  const double t0 = MPI_Wtime();
  if (prefetch_ && split == Split::Train) {
    request_ahead();
    // A schedule that consumed micro-batches out of order would train on the wrong data: refuse instead.
    if (req_first_.front() != first)
      throw Error("internal: prefetched micro-batch starts at sample " + std::to_string(req_first_.front()) +
                  ", the schedule wants " + std::to_string(first));
    req_first_.pop_front();
    prefetch_->take(rows_.data());  // the oldest request: this micro-batch
    request_ahead();                  // the next read overlaps this micro-batch's compute
  } else {
    if (prefetch_) prefetch_->quiesce();  // HDF5 is not thread-safe
    std::vector<int64_t> samples(B);
    for (int b = 0; b < B; ++b) samples[b] = first + b;
    data_->read(split, samples.data(), B, rows_.data());
  }
  wait_s_ += MPI_Wtime() - t0;
}

void BatchLoader::quiesce() {
  if (prefetch_) prefetch_->quiesce();
}

double BatchLoader::take_wait_seconds() {
  const double w = wait_s_;
  wait_s_ = 0;
  return w;
}

}  // namespace gt
