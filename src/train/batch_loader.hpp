#pragma once
// The samples of each micro-batch for the stages that read them (GPT's first: embedding inputs; its last: loss
// targets): which global samples a DP rank takes and the prefetch queue that runs data.prefetch micro-batches
// ahead of training. A sample is one row of the model family's data source (DataSource::row_elems() words); the
// model splits it (StageModel::set_samples).
#include <deque>
#include <memory>
#include <vector>

#include "src/core/config.hpp"
#include "src/data/data_source.hpp"
#include "src/data/prefetch.hpp"

namespace gt {

class BatchLoader {
 public:
  // data: the model family's source (ModelFamily::make_source). reads_samples: this stage reads data at all (first
  // or last pipeline stage); the prefetcher starts only then.
  BatchLoader(const Config& cfg, std::unique_ptr<DataSource> data, int dp_rank, int dp_size, bool reads_samples);
  ~BatchLoader();

  DataSource& source() { return *data_; }
  int64_t global_batch() const { return global_batch_; }  // sequences per optimizer step
  int micro_batches() const { return local_m_; }          // this replica's micro-batches per step
  // The first global sample of micro-batch m of the step that starts at sample `samples_done`: DP rank r
  // takes the r-th contiguous share of the global batch, so the global batch is the same sequences for any
  // layout.
  int64_t first_sample(int64_t samples_done, int m) const;
  // Training resumes (or starts) at `samples_done`: prefetching starts at its first micro-batch.
  void restart_at(int64_t samples_done);
  // parallel.adapt = rebalance at pp = 1: from the step that starts at `samples_done` on, this replica runs
  // shares[dp_rank] micro-batches from micro-batch sum(shares[0..dp_rank)) of each step (dp/dp_shares.hpp). At a
  // step boundary only: the micro-batches prefetched for the old share are read and dropped.
  void set_shares(const std::vector<int>& shares, int64_t samples_done);
  // Reads the micro-batch starting at first_sample into rows() (B rows). Training reads come from the prefetch
  // queue, in order; anything else is read synchronously.
  void load(Split split, int64_t first_sample);
  const int32_t* rows() const { return rows_.data(); }
  // No HDF5 read in flight (before checkpoint writes).
  void quiesce();
  // Seconds spent waiting for data since the last call.
  double take_wait_seconds();

 private:
  void request_ahead();

  const Config& cfg_;
  int dp_rank_;
  int64_t global_batch_;
  int local_m_;          // this replica's micro-batches per step (parallel.dp_shares; else train.micro_batches)
  int64_t first_micro_;  // its first micro-batch within the step's global batch
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<BatchPrefetcher> prefetch_;
  int64_t req_samples_done_ = 0;  // the next prefetch request: step base and micro-batch
  int req_m_ = 0;
  std::deque<int64_t> req_first_;  // first sample of each outstanding request, oldest first
  std::vector<int32_t> rows_;
  double wait_s_ = 0;
};

}  // namespace gt
