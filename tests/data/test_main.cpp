// GoogleTest entry point for the data tests (no MPI: the data code reads and writes with serial HDF5).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
