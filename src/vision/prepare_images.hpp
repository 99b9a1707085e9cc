#pragma once
// `gridtrain prepare --images fashion-mnist [--images-dir DIR] --out FILE.h5`: the idx files of Debian's
// dataset-fashion-mnist (default DIR /usr/share/datasets/fashion-mnist) into an HDF5 image dataset
// (image_dataset.hpp). Returns the exit code: 0, 1 (bad input, "gridtrain: error: ..." printed) or 2 (bad command
// line). Under MPI only world rank 0 works.
#include <string>
#include <vector>

namespace gt::vision {

// args: the command line after "prepare"
int prepare_images_main(const std::vector<std::string>& args);

// The conversion itself (gt::Error on bad input; then no FILE.h5 is left, and an existing one is untouched).
void prepare_fashion_mnist(const std::string& dir, const std::string& out, int* train_images, int* test_images);

}  // namespace gt::vision
