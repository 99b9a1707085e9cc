// The energy reader (src/energy) against a fake powercap tree written here: which zones count (packages, not
// their core/dram subzones, not psys or the MMIO interface), joules from microjoules, the wrap at
// max_energy_range_uj, a package shared by ranks, and the "n/a (no counter: ...)" answers that replace any
// reading that cannot be made. Every value is written by the test, so the expected joules are exact.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/energy/energy_meter.hpp"

namespace {

void put(const std::string& path, const std::string& text) {
  std::ofstream(path) << text << "\n";
}

// A powercap root with two packages, a core subzone, psys and the MMIO interface, in a fresh directory per rank.
struct FakeTree {
  std::string root;
  FakeTree() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    char tmpl[] = "/tmp/gridtrain_energy_XXXXXX";
    root = mkdtemp(tmpl);
    zone("intel-rapl:0", "package-0", 1000000, 5000000);
    zone("intel-rapl:0:0", "core", 7, 5000000);
    zone("intel-rapl:1", "package-1", 2000000, 5000000);
    zone("intel-rapl:2", "psys", 3, 5000000);
    zone("intel-rapl-mmio:0", "package-0", 9, 5000000);
    mkdir((root + "/cpu").c_str(), 0755);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF); ++c) {  // a fake cpu tree: every CPU on package 0
      const std::string d = root + "/cpu/cpu" + std::to_string(c);
      mkdir(d.c_str(), 0755);
      mkdir((d + "/topology").c_str(), 0755);
      put(d + "/topology/physical_package_id", "0");
    }
  }
  ~FakeTree() { std::filesystem::remove_all(root); }
  void zone(const std::string& dir, const std::string& name, long long uj, long long range) {
    mkdir((root + "/" + dir).c_str(), 0755);
    put(root + "/" + dir + "/name", name);
    put(root + "/" + dir + "/energy_uj", std::to_string(uj));
    put(root + "/" + dir + "/max_energy_range_uj", std::to_string(range));
  }
  void set(const std::string& dir, long long uj) { put(root + "/" + dir + "/energy_uj", std::to_string(uj)); }
};

TEST(Energy, PackageZonesOnly) {
  FakeTree t;
  const auto z = gt::rapl_package_zones(t.root);
  ASSERT_EQ(z.size(), 2u);
  EXPECT_EQ(z[0], t.root + "/intel-rapl:0");
  EXPECT_EQ(z[1], t.root + "/intel-rapl:1");
}

TEST(Energy, JoulesAcrossTheWrap) {
  FakeTree t;
  gt::RaplZone z(t.root + "/intel-rapl:0");
  EXPECT_EQ(z.name(), "package-0");
  EXPECT_DOUBLE_EQ(z.joules(), 0.0);
  t.set("intel-rapl:0", 1500000);
  EXPECT_DOUBLE_EQ(z.joules(), 0.5);
  t.set("intel-rapl:0", 4900000);
  EXPECT_DOUBLE_EQ(z.joules(), 3.9);
  t.set("intel-rapl:0", 400000);  // wrapped at 5 J: 0.1 J to the top, 0.4 J after it
  EXPECT_DOUBLE_EQ(z.joules(), 4.4);
}

TEST(Energy, SharedPackageGivesEachRankItsShare) {
  FakeTree t;
  auto m = gt::make_rapl_meter(t.root, 1, 2);
  ASSERT_TRUE(m->available());
  EXPECT_EQ(m->source(), "RAPL package-1 (1 of 2 ranks on it)");
  t.set("intel-rapl:1", 3000000);
  EXPECT_DOUBLE_EQ(*m->joules(), 0.5);
}

TEST(Energy, NoCounterIsSaidNotEstimated) {
  FakeTree t;
  auto none = gt::make_rapl_meter(t.root + "/missing", 0, 1);
  EXPECT_FALSE(none->available());
  EXPECT_FALSE(none->joules().has_value());
  EXPECT_EQ(none->source().rfind("n/a (no counter: no RAPL package zone", 0), 0u) << none->source();
  auto other = gt::make_rapl_meter(t.root, 5, 1);
  EXPECT_NE(other->source().find("no RAPL zone named package-5"), std::string::npos) << other->source();
  unlink((t.root + "/intel-rapl:0/energy_uj").c_str());  // unreadable counter (root-only on most kernels)
  auto unreadable = gt::make_rapl_meter(t.root, 0, 1);
  EXPECT_FALSE(unreadable->available());
  EXPECT_NE(unreadable->source().find("cannot read"), std::string::npos) << unreadable->source();
  t.set("intel-rapl:0", 0);
  put(t.root + "/intel-rapl:0/max_energy_range_uj", "lots");
  EXPECT_NE(gt::make_rapl_meter(t.root, 0, 1)->source().find("does not hold a number"), std::string::npos);
  // no NVIDIA driver here (or no such bus id): n/a, no crash
  auto gpu = gt::make_nvml_meter("0000:FF:1F.7");
  EXPECT_FALSE(gpu->available());
  EXPECT_EQ(gpu->source().rfind("n/a (no counter: ", 0), 0u) << gpu->source();
}

// Collective: every rank of this node is on package 0 of the fake cpu tree, so each gets 1/size of it (the ranks
// write the same counter value into their own trees).
TEST(Energy, RunMeterAgreesOnTheShare) {
  FakeTree t;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto m = gt::make_run_meter(MPI_COMM_WORLD, "", t.root, t.root + "/cpu");
  ASSERT_TRUE(m->available()) << m->source();
  t.set("intel-rapl:0", 1000000 + 600000);
  EXPECT_DOUBLE_EQ(*m->joules(), 0.6 / size);
}

}  // namespace
