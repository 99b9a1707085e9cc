// Large inputs stream: the peak resident memory of gridtrain-prepare (a child process, measured by the kernel
// through wait4) does not grow with the size of the input. A small and an 8x larger single-document corpus
// are prepared; holding the text or its tokens would add at least the 21 MB difference (84 MB as int32
// tokens). The bound (8 MiB) is generous for allocator noise; nothing here depends on time.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/data/data_helpers.hpp"
#include "tests/data/test_util.hpp"

namespace fs = std::filesystem;

namespace {

// Writes `bytes` of varied text (not one repeated byte, so that no layer can compress it away).
void write_text(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::string line;
  uint64_t x = 88172645463325252ull;
  size_t written = 0;
  while (written < bytes) {
    line.clear();
    for (int w = 0; w < 12; ++w) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      line += "word" + std::to_string(x % 100000) + (w == 11 ? "\n" : " ");
    }
    const size_t n = std::min(line.size(), bytes - written);
    out.write(line.data(), std::streamsize(n));
    written += n;
  }
}

struct PrepareRun {
  long max_rss_kib;
  uint64_t train_tokens;
};

PrepareRun prepare(const std::string& dir, const std::string& name, size_t bytes) {
  const std::string in = dir + "/" + name + ".txt", out = dir + "/" + name + ".h5";
  write_text(in, bytes);
  const gt::test::ChildResult r =
      gt::test::run_child({GT_PREPARE_BIN, "--tokenizer", "byte", "--val-fraction", "0", "--quiet", "--out", out, in},
                          dir + "/" + name + ".out", dir + "/" + name + ".err");
  EXPECT_EQ(r.exit_code, 0) << gt::test::read_file(dir + "/" + name + ".err");
  const std::vector<int64_t> tokens = gt::test::raw_attr_ints<int64_t>(out, "train_tokens");
  fs::remove(in);
  fs::remove(out);
  return {r.max_rss_kib, tokens.empty() ? 0 : uint64_t(tokens[0])};
}

}  // namespace

TEST(Streaming, PeakMemoryDoesNotGrowWithTheInput) {
  const std::string dir = gt::test::scratch_dir();
  const size_t small = size_t(3) << 20, large = size_t(24) << 20;
  const PrepareRun a = prepare(dir, "small", small);
  const PrepareRun b = prepare(dir, "large", large);
  EXPECT_EQ(a.train_tokens, small + 1);  // every byte a token, plus the end-of-document id
  EXPECT_EQ(b.train_tokens, large + 1);
  const long growth_kib = b.max_rss_kib - a.max_rss_kib;
  std::printf("peak RSS: %ld KiB for %zu MiB of input, %ld KiB for %zu MiB (growth %ld KiB)\n", a.max_rss_kib,
              small >> 20, b.max_rss_kib, large >> 20, growth_kib);
  EXPECT_LT(growth_kib, 8 * 1024) << "peak memory grew with the input: " << a.max_rss_kib << " KiB -> "
                                  << b.max_rss_kib << " KiB for " << (small >> 20) << " -> " << (large >> 20)
                                  << " MiB of text";
}
