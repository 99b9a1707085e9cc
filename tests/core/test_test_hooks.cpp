// The test hooks (src/core/test_hooks.hpp) parse what the tests set: each hook against the value its test
// gives, unset and empty meaning production behaviour, and a malformed slow-block list an error naming the
// variable. (That no other production file reads such a variable: test core_test_hooks_only_here.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>

#include "src/core/error.hpp"
#include "src/core/test_hooks.hpp"

namespace th = gt::test_hooks;

namespace {

struct Env {  // sets a variable for one test, removes it after
  const char* name;
  Env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~Env() { ::unsetenv(name); }
};

// Each value in bad, set in variable var, makes parse() throw gt::Error.
template <class Parse>
void expect_rejected(const char* var, std::initializer_list<const char*> bad, Parse parse) {
  for (const char* b : bad) {
    Env s(var, b);
    EXPECT_THROW(parse(), gt::Error) << b;
  }
}

TEST(TestHooks, UnsetAndEmptyMeanProduction) {
  EXPECT_FALSE(th::fail_hook().armed);
  EXPECT_FALSE(th::gradient_hook().armed);
  EXPECT_FALSE(th::host_mirror_copy());
  EXPECT_TRUE(th::slow_blocks().empty());
  EXPECT_LT(th::mem_available_bytes(), 0);
  EXPECT_LT(th::device_free_bytes(), 0);
  EXPECT_FALSE(th::device_memory_as_cuda());
  EXPECT_EQ(th::h5_probe_sleep_s(), 0.0);
  EXPECT_EQ(th::crash_in_checkpoint_step(), -1);
  Env e("GRIDTRAIN_TEST_FAIL_RANK", "");
  EXPECT_FALSE(th::fail_hook().armed);
}

TEST(TestHooks, FailRankBeforeTheTrainerOrInAStep) {
  Env r("GRIDTRAIN_TEST_FAIL_RANK", "1");
  EXPECT_TRUE(th::fail_hook().fails_at_start(1));
  EXPECT_FALSE(th::fail_hook().fails_at_start(0));
  Env s("GRIDTRAIN_TEST_FAIL_STEP", "3");
  EXPECT_FALSE(th::fail_hook().fails_at_start(1));  // with a step, only the trainer's hook fires
  EXPECT_TRUE(th::fail_hook().fails_in_step(1, 3));
  EXPECT_FALSE(th::fail_hook().fails_in_step(1, 2));
}

TEST(TestHooks, GradientValue) {
  Env r("GRIDTRAIN_TEST_INF_RANK", "0"), s("GRIDTRAIN_TEST_INF_STEP", "5");
  th::GradientHook h = th::gradient_hook();
  EXPECT_TRUE(h.armed && h.rank == 0 && h.step == 5 && !h.nan && !h.has_value);
  {
    Env n("GRIDTRAIN_TEST_INF_NAN", "1");
    EXPECT_TRUE(th::gradient_hook().nan);
    Env v("GRIDTRAIN_TEST_INF_VALUE", "1e4");  // a value wins over NaN
    h = th::gradient_hook();
    EXPECT_TRUE(h.has_value);
    EXPECT_EQ(h.finite_value, 1e4f);
  }
}

TEST(TestHooks, ValuesOfTheOthers) {
  Env a("GRIDTRAIN_TEST_HOST_MIRROR", "copy"), b("GRIDTRAIN_TEST_MEMAVAILABLE_MB", "2"),
      c("GRIDTRAIN_TEST_DEVICE_FREE_MB", "0.5"), d("GRIDTRAIN_TEST_DEVICE_MEMORY", "cuda"),
      e("GRIDTRAIN_TEST_H5_PROBE_SLEEP_S", "30"), f("GRIDTRAIN_CRASH_IN_CHECKPOINT", "4");
  EXPECT_TRUE(th::host_mirror_copy());
  EXPECT_EQ(th::mem_available_bytes(), 2.0 * 1048576);
  EXPECT_EQ(th::device_free_bytes(), 0.5 * 1048576);
  EXPECT_TRUE(th::device_memory_as_cuda());
  EXPECT_EQ(th::h5_probe_sleep_s(), 30.0);
  EXPECT_EQ(th::crash_in_checkpoint_step(), 4);
}

TEST(TestHooks, EnergyRoots) {
  EXPECT_EQ(th::powercap_root(), "/sys/class/powercap");  // unset: the real trees
  EXPECT_EQ(th::cpu_sysfs_root(), "/sys/devices/system/cpu");
  Env p("GRIDTRAIN_TEST_POWERCAP_ROOT", "/tmp/fake"), c("GRIDTRAIN_TEST_CPU_ROOT", "/tmp/fake/cpu");
  EXPECT_EQ(th::powercap_root(), "/tmp/fake");
  EXPECT_EQ(th::cpu_sysfs_root(), "/tmp/fake/cpu");
}

TEST(TestHooks, SlowBlocks) {
  {
    Env s("GRIDTRAIN_TEST_SLOW_BLOCK", "0:250,3:40");
    const auto b = th::slow_blocks();
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].first, 0);
    EXPECT_DOUBLE_EQ(b[0].second, 0.25);
    EXPECT_EQ(b[1].first, 3);
    EXPECT_DOUBLE_EQ(b[1].second, 0.04);
  }
  expect_rejected("GRIDTRAIN_TEST_SLOW_BLOCK", {"3", ":40", "1:5,"}, th::slow_blocks);
}

TEST(TestHooks, SlowRank) {
  EXPECT_EQ(th::slow_rank().rank, -1);  // unset: nobody is slowed
  {
    Env s("GRIDTRAIN_TEST_SLOW_RANK", "1:3");
    EXPECT_EQ(th::slow_rank().rank, 1);
    EXPECT_DOUBLE_EQ(th::slow_rank().factor, 3.0);
  }
  expect_rejected("GRIDTRAIN_TEST_SLOW_RANK", {"1", ":3", "1:0.5", "-1:2", "x:2", "1:"}, th::slow_rank);
}

TEST(TestHooks, LayoutPredictFactors) {
  EXPECT_TRUE(th::layout_predict_factors().empty());  // unset: the planner's predictions as they are
  {
    Env s("GRIDTRAIN_TEST_LAYOUT_PREDICT", "1,2,1:0.25;2,1,1:4");
    const auto f = th::layout_predict_factors();
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].pp, 2);
    EXPECT_DOUBLE_EQ(f[0].factor, 0.25);
    EXPECT_EQ(f[1].tp, 2);
    EXPECT_DOUBLE_EQ(f[1].factor, 4.0);
  }
  expect_rejected("GRIDTRAIN_TEST_LAYOUT_PREDICT", {"1,2,1", "1,2:0.5", "1,2,1:0", "0,2,1:1", "1,2,1:2;", "1,2,1:2x"},
                  th::layout_predict_factors);
}

}  // namespace
