// Reading an HDF5 token dataset. The test dataset stores token p at position p (data_helpers.hpp), so every
// row read shows where in the file it came from, without trusting the sampler or the reader.
//  * Layouts: the rows DP ranks 0..dp-1 read for a global batch, with the trainer's sample arithmetic
//    (BatchLoader::first_sample in src/train/batch_loader.cpp: first_sample = samples_done + dp_rank*B*M + m*B), each rank with its
//    own reader, are the same sequences for dp = 1, 2, 4, 8.
//  * An epoch: n = (tokens - 1) / T windows of stride T; their inputs cover positions [0, n*T) exactly once.
//  * Hyperslab reads equal the same range of the whole array read at once (uint8, uint16 and uint32 files).
//  * The prefetching reader gives exactly the batches of the direct reader, at every depth.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/data/dataset_file.hpp"
#include "src/data/dataset_writer.hpp"
#include "src/data/hdf5_source.hpp"
#include "src/data/prefetch.hpp"
#include "tests/data/data_helpers.hpp"
#include "tests/data/test_util.hpp"

using namespace gt;

namespace {

constexpr int64_t kTrainTokens = 200003;  // > 3 HDF5 chunks of 65536 tokens; 3125 windows of T = 64
constexpr int64_t kValTokens = 5003;
constexpr int kT = 64;

std::string position_dataset(const std::string& dir) {
  const std::string path = dir + "/positions.h5";
  test::write_position_dataset(path, kTrainTokens, kValTokens);
  return path;
}

// Rows of one global batch as the trainer's DP ranks read them, in global sample order.
// readers: one per DP rank (each rank opens the file on its own).
std::vector<int32_t> global_batch(std::vector<HDF5Source>& readers, int B, int M, int64_t samples_done) {
  const int dp = int(readers.size());
  const int64_t L = kT + 1, G = int64_t(B) * M * dp;
  std::vector<int32_t> rows(size_t(G * L), -1);
  for (int r = 0; r < dp; ++r)
    for (int m = 0; m < M; ++m) {
      const int64_t first_sample = samples_done + int64_t(r) * B * M + int64_t(m) * B;
      std::vector<int64_t> samples(static_cast<size_t>(B));
      for (int b = 0; b < B; ++b) samples[size_t(b)] = first_sample + b;
      readers[size_t(r)].read(Split::Train, samples.data(), B, rows.data() + (first_sample - samples_done) * L);
    }
  return rows;
}

}  // namespace

TEST(Reader, GlobalBatchesIdenticalForAnyDataParallelLayout) {
  const std::string path = position_dataset(test::scratch_dir());
  const int64_t G = 16;
  // (dp, B, M) with B * M * dp = G
  const std::vector<std::array<int, 3>> layouts = {{1, 4, 4}, {2, 4, 2}, {4, 2, 2}, {8, 2, 1}, {8, 1, 2}};
  const int64_t n = (kTrainTokens - 1) / kT;
  const int64_t steps = (2 * n) / G + 2;  // a little over two epochs: the epoch boundary falls inside a batch
  std::vector<std::vector<int32_t>> reference;
  for (const auto& l : layouts) {
    std::vector<HDF5Source> readers;
    readers.reserve(size_t(l[0]));
    for (int r = 0; r < l[0]; ++r) readers.emplace_back(path, kT, 2024);
    for (int64_t step = 0; step < steps; ++step) {
      const std::vector<int32_t> rows = global_batch(readers, l[1], l[2], step * G);
      if (l == layouts[0]) {
        reference.push_back(rows);
      } else {
        ASSERT_EQ(rows, reference[size_t(step)]) << "dp=" << l[0] << " B=" << l[1] << " M=" << l[2] << " step " << step;
      }
    }
  }
}

TEST(Reader, EveryTokenOfAnEpochIsReadOnce) {
  const std::string path = position_dataset(test::scratch_dir());
  HDF5Source src(path, kT, 99);
  const int64_t n = src.samples_per_epoch(Split::Train);
  ASSERT_EQ(n, (kTrainTokens - 1) / kT);
  EXPECT_LT(kTrainTokens - 1 - n * kT, kT) << "more than a window's worth of tokens dropped at the end";
  std::vector<int64_t> first_epoch;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> covered(size_t(n * kT), 0);
    std::vector<int64_t> order;
    std::vector<int64_t> samples(16);
    std::vector<int32_t> rows(16 * (kT + 1));
    for (int64_t s = epoch * n; s < (epoch + 1) * n; s += 16) {
      const int k = int(std::min<int64_t>(16, (epoch + 1) * n - s));
      for (int i = 0; i < k; ++i) samples[size_t(i)] = s + i;
      src.read(Split::Train, samples.data(), k, rows.data());
      for (int i = 0; i < k; ++i) {
        const int32_t* row = rows.data() + i * (kT + 1);
        ASSERT_EQ(row[0] % kT, 0) << "a window not on the stride";
        for (int t = 0; t <= kT; ++t) ASSERT_EQ(row[t], row[0] + t) << "not a contiguous window of the file";
        for (int t = 0; t < kT; ++t) ++covered[size_t(row[0] + t)];
        order.push_back(row[0] / kT);
      }
    }
    for (int64_t p = 0; p < n * kT; ++p) ASSERT_EQ(covered[size_t(p)], 1) << "epoch " << epoch << " position " << p;
    if (epoch == 0) {
      first_epoch = order;
      int in_place = 0;
      for (int64_t i = 0; i < n; ++i) in_place += order[size_t(i)] == i;
      EXPECT_LT(in_place, 50) << "the epoch order is not shuffled";
    } else {
      EXPECT_NE(order, first_epoch) << "epoch " << epoch << " repeats the order of epoch 0";
    }
  }
  // another seed, another order; the val split has its own windows
  HDF5Source other(path, kT, 100);
  int same = 0;
  for (int64_t s = 0; s < 100; ++s) same += other.sequence_of(Split::Train, s) == src.sequence_of(Split::Train, s);
  EXPECT_LT(same, 10);
  EXPECT_EQ(src.samples_per_epoch(Split::Val), (kValTokens - 1) / kT);
}

TEST(Reader, HyperslabReadsEqualTheWholeArray) {
  const std::string dir = test::scratch_dir();
  std::mt19937_64 rng(5);
  // one file per stored width; random ids, several chunks long
  for (int vocab : {256, 50257, 1 << 20}) {
    const std::string path = dir + "/v" + std::to_string(vocab) + ".h5";
    const int64_t n = 3 * 65536 + 1234;
    {
      DatasetWriter w(path, "test", vocab, 0);
      std::vector<int32_t> ids(size_t(n - 1));
      for (int32_t& id : ids) id = int32_t(rng() % uint64_t(vocab));
      w.begin_document(Split::Train);
      w.append(Split::Train, ids.data(), ids.size());
      w.end_document(Split::Train);
      w.finish();
    }
    const std::vector<uint64_t> whole = test::raw_dataset(path, "train/tokens").u64;
    ASSERT_EQ(int64_t(whole.size()), n);
    DatasetFile f(path);
    std::vector<std::pair<int64_t, int64_t>> ranges = {{0, n}, {0, 1}, {n - 1, 1}, {65535, 2}, {65536 - 100, 200},
                                                       {2 * 65536 - 7, 65536 + 14}, {12345, 0}};
    for (int i = 0; i < 50; ++i) {
      const int64_t start = int64_t(rng() % uint64_t(n)), count = int64_t(rng() % uint64_t(n - start + 1));
      ranges.push_back({start, std::min<int64_t>(count, 70000)});
    }
    for (const auto& r : ranges) {
      std::vector<int32_t> got(size_t(std::max<int64_t>(r.second, 1)), -1);
      f.read_tokens(Split::Train, r.first, r.second, got.data());
      for (int64_t i = 0; i < r.second; ++i)
        ASSERT_EQ(uint64_t(got[size_t(i)]), whole[size_t(r.first + i)])
            << "vocab " << vocab << " range [" << r.first << ", +" << r.second << ") at " << i;
    }
    std::vector<int32_t> out(4);
    EXPECT_THROW(f.read_tokens(Split::Train, n - 1, 2, out.data()), Error);
    EXPECT_THROW(f.read_tokens(Split::Train, -1, 1, out.data()), Error);
  }
}

TEST(Prefetch, SameBatchesAsTheDirectReader) {
  const std::string path = position_dataset(test::scratch_dir());
  const int B = 4, L = kT + 1, steps = 40;
  // the requests a training loop makes: train batches, a val batch every 10
  std::vector<std::pair<Split, std::vector<int64_t>>> requests;
  for (int s = 0; s < steps; ++s) {
    std::vector<int64_t> samples;
    for (int b = 0; b < B; ++b) samples.push_back(int64_t(s) * B + b);
    requests.push_back({Split::Train, samples});
    if (s % 10 == 9) requests.push_back({Split::Val, {0, 1, 2, 3}});
  }
  std::vector<std::vector<int32_t>> expected;
  {
    HDF5Source direct(path, kT, 7);
    for (const auto& r : requests) {
      std::vector<int32_t> rows(r.second.size() * L);
      direct.read(r.first, r.second.data(), int(r.second.size()), rows.data());
      expected.push_back(rows);
    }
  }
  for (int depth : {0, 1, 2, 3}) {
    HDF5Source src(path, kT, 7);
    BatchPrefetcher pf(src, depth);
    const size_t ahead = size_t(std::max(1, depth));
    size_t next = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      while (next < requests.size() && next < i + ahead) {
        pf.request(requests[next].first, requests[next].second);
        ++next;
      }
      if (i % 7 == 3) pf.quiesce();  // as before a checkpoint write: the next take still gets its batch
      std::vector<int32_t> rows(requests[i].second.size() * L, -1);
      pf.take(rows.data());
      ASSERT_EQ(rows, expected[i]) << "depth " << depth << " request " << i;
    }
    EXPECT_EQ(pf.outstanding(), 0);
    EXPECT_THROW(pf.take(expected[0].data()), Error) << "take without a request";
  }
}

TEST(Prefetch, ReadErrorsReachTheCaller) {
  // the val split holds fewer tokens than one window: the read fails in the background thread and take()
  // rethrows it as gt::Error naming the file
  const std::string path = test::scratch_dir() + "/short_val.h5";
  test::write_position_dataset(path, 1000, 10);
  HDF5Source src(path, kT, 1);
  for (int depth : {0, 2}) {
    BatchPrefetcher pf(src, depth);
    std::vector<int32_t> rows(2 * (kT + 1));
    pf.request(Split::Train, {0, 1});
    if (depth >= 2) pf.request(Split::Val, {0});  // both queued: the failing read runs in the background
    pf.take(rows.data());
    EXPECT_EQ(rows[0] % kT, 0);
    if (depth < 2) pf.request(Split::Val, {0});
    try {
      pf.take(rows.data());
      ADD_FAILURE() << "no error at depth " << depth;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("val"), std::string::npos) << e.what();
    }
  }
}
