// The per-user peak cache (src/core/peak_cache.hpp): the record in force is the best figure ever merged for a
// (cpu, isa) key, a lower measurement leaves it unchanged (and counts the run), other keys are untouched, a
// damaged file is read as "no record" rather than an error, and an unwritable cache still gives the merged
// record and says why it was not written. Expected values are the inputs themselves (max of what was merged).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "src/core/peak_cache.hpp"

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gt_peak_cache_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

gt::PeakRecord measured(const std::string& cpu, const std::string& isa, double gflops) {
  return gt::PeakRecord{cpu, isa, gflops, "", "hostA", 16, 0};
}

TEST(PeakCache, KeepsTheBestFigurePerKey) {
  TempDir d;
  const std::string f = d.path + "/sub/dir/peak_flops.tsv";  // parents are created
  std::string err;
  gt::PeakRecord r = gt::merge_peak_record(f, measured("cpu X", "avx512 fma", 150.0), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(r.gflops, 150.0);
  EXPECT_EQ(r.runs, 1);
  r = gt::merge_peak_record(f, measured("cpu X", "avx512 fma", 220.0), &err);  // higher: replaces
  EXPECT_EQ(r.gflops, 220.0);
  EXPECT_EQ(r.runs, 2);
  const std::string stamp = r.measured_at;
  r = gt::merge_peak_record(f, measured("cpu X", "avx512 fma", 120.0), &err);  // a loaded run: kept out
  EXPECT_EQ(r.gflops, 220.0);
  EXPECT_EQ(r.runs, 3);
  EXPECT_EQ(r.measured_at, stamp);  // the provenance is the best figure's
  gt::merge_peak_record(f, measured("cpu X", "avx512_bf16 vdpbf16ps", 440.0), &err);
  gt::merge_peak_record(f, measured("cpu Y", "avx512 fma", 90.0), &err);
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx512 fma").gflops, 220.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx512_bf16 vdpbf16ps").gflops, 440.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu Y", "avx512 fma").gflops, 90.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu Z", "avx512 fma").gflops, 0.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx512 fma").host, "hostA");
}

TEST(PeakCache, DamagedLinesAreIgnored) {
  TempDir d;
  const std::string f = d.path + "/peak_flops.tsv";
  std::ofstream(f) << "garbage\ncpu X\tavx512 fma\tnot-a-number\tt\th\t1\t1\n"
                   << "cpu X\tavx2 fma\t-5\tt\th\t1\t1\n"
                   << "cpu X\tavx512 fma\t200\t2026-12-04T00:00:00Z\th\t16\t4\n";
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx512 fma").gflops, 200.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx512 fma").runs, 4);
  EXPECT_EQ(gt::read_peak_record(f, "cpu X", "avx2 fma").gflops, 0.0);  // a negative figure is no record
  EXPECT_EQ(gt::read_peak_record(d.path + "/absent.tsv", "cpu X", "avx512 fma").gflops, 0.0);
}

TEST(PeakCache, UnwritableCacheStillGivesTheRecord) {
  // /proc takes no new directories, not even from root (the tests may run as root)
  std::string err;
  const gt::PeakRecord r = gt::merge_peak_record("/proc/gt-no-such-dir/peak_flops.tsv", measured("cpu X", "fma", 100.0), &err);
  EXPECT_EQ(r.gflops, 100.0);
  EXPECT_EQ(r.runs, 1);
  EXPECT_NE(err.find("cannot write"), std::string::npos) << err;
}

TEST(PeakCache, TabsInNamesDoNotBreakTheFormat) {
  TempDir d;
  const std::string f = d.path + "/peak_flops.tsv";
  std::string err;
  gt::merge_peak_record(f, measured("cpu\twith tab", "fma", 100.0), &err);
  EXPECT_EQ(gt::read_peak_record(f, "cpu\twith tab", "fma").gflops, 100.0);
  EXPECT_EQ(gt::read_peak_record(f, "cpu with tab", "fma").gflops, 100.0);
}

TEST(PeakCache, PathFollowsXdgThenHome) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(gt::peak_cache_path(), "/x/cache/gridtrain/peak_flops.tsv");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", ::getenv("HOME") ? ::getenv("HOME") : "/h", 1);
  EXPECT_EQ(gt::peak_cache_path(), std::string(::getenv("HOME")) + "/.cache/gridtrain/peak_flops.tsv");
  if (xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(PeakCache, CpuIdentityNamesTheModelNumbers) {
  const std::string id = gt::cpu_identity();
  EXPECT_FALSE(id.empty());
  if (id != "unknown cpu") {
    EXPECT_NE(id.find("(family "), std::string::npos) << id;
  }
}

}  // namespace
