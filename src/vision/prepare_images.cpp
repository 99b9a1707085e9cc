#include "src/vision/prepare_images.hpp"

#include <mpi.h>

#include <cstdio>
#include <stdexcept>

#include "src/core/error.hpp"
#include "src/vision/idx_reader.hpp"
#include "src/vision/image_dataset.hpp"

namespace gt::vision {
namespace {

const char* kUsage =
    "usage: gridtrain prepare --images fashion-mnist [--images-dir /usr/share/datasets/fashion-mnist] --out FILE.h5\n";

ImageSplit load_split(const std::string& dir, const std::string& prefix) {
  const IdxImages img = read_idx_images(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  const auto lab = read_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (lab.size() != size_t(img.count))
    throw Error(dir + ": " + prefix + " has " + std::to_string(img.count) + " images but " +
                std::to_string(lab.size()) + " labels");
  return {img.count, img.rows, img.cols, 1, img.pixels, std::vector<std::int32_t>(lab.begin(), lab.end())};
}

bool rank_zero() {
  int init = 0, fin = 0, rank = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

}  // namespace

void prepare_fashion_mnist(const std::string& dir, const std::string& out, int* train, int* test) {
  ImageDataset ds{"fashion-mnist", 10, load_split(dir, "train"), load_split(dir, "t10k")};
  write_image_dataset(out, ds);
  *train = ds.train.count;
  *test = ds.test.count;
}

int prepare_images_main(const std::vector<std::string>& args) {
  std::string name, dir = "/usr/share/datasets/fashion-mnist", out;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const size_t eq = args[i].find('=');  // --flag=value as well as --flag value
      const std::string a = args[i].substr(0, eq);
      auto next = [&]() -> std::string {
        if (eq != std::string::npos) return args[i].substr(eq + 1);
        if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
        return args[++i];
      };
      if (a == "--images") name = next();
      else if (a == "--images-dir") dir = next();
      else if (a == "--out" || a == "-o") out = next();
      else throw std::invalid_argument("unknown option " + a + " (with --images)");
    }
    if (name != "fashion-mnist") throw std::invalid_argument("--images knows fashion-mnist only, not '" + name + "'");
    if (out.empty()) throw std::invalid_argument("--out FILE.h5 is required");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%sgridtrain: error: prepare: %s\n", kUsage, e.what());
    return 2;
  }
  if (!rank_zero()) return 0;
  try {
    int train = 0, test = 0;
    prepare_fashion_mnist(dir, out, &train, &test);
    std::printf("prepare: %s: fashion-mnist from %s: %d train + %d test images\n", out.c_str(), dir.c_str(), train,
                test);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "gridtrain: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gt::vision
