#include "src/io/inspect.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "src/core/error.hpp"
#include "src/io/checkpoint_verify.hpp"
#include "src/io/h5_error.hpp"
#include "src/io/h5_util.hpp"
#include "src/io/shard_table.hpp"

namespace gt {

using io::H5Handle;

namespace {

H5Handle open_serial(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": no such file");
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) throw Error(path + ": not a readable HDF5 file" + io::h5_error_suffix());
  return file;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// Multi-line values (the config TOML) are printed as an indented block, others on the key's line.
void print_string(std::ostream& os, const std::string& key, const std::string& v) {
  if (v.find('\n') == std::string::npos) {
    os << "  " << key << " = \"" << v << "\"\n";
    return;
  }
  os << "  " << key << " = (" << v.size() << " bytes)\n";
  size_t p = 0;
  while (p < v.size()) {
    const size_t nl = std::min(v.find('\n', p), v.size());
    os << "    | " << v.substr(p, nl - p) << '\n';
    p = nl + 1;
  }
}

}  // namespace

std::string hdf5_file_kind(const std::string& path) {
  io::H5Quiet quiet;
  H5Handle file = open_serial(path);
  if (!io::has_attr(file.get(), "gridtrain_kind")) return "";
  try {
    return io::read_attr_str(file.get(), "gridtrain_kind");
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

namespace {

// The listing: root attributes and every dataset with its checksum. Returns the number of problems it saw.
int list_checkpoint(const std::string& path, std::ostream& os) {
  H5Handle file = open_serial(path);
  CheckpointMeta meta;
  try {
    meta = io::read_all_attrs(file.get());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  int bad = 0;
  os << "file: " << path << '\n';
  try {
    io::read_checkpoint_root(file.get(), path);
  } catch (const Error& e) {
    os << "problem: " << e.what() << '\n';
    ++bad;
  }
  os << "meta:\n";
  char num[64];
  for (const auto& [k, v] : meta.ints) os << "  " << k << " = " << v << '\n';
  for (const auto& [k, v] : meta.reals) {
    std::snprintf(num, sizeof num, "%.17g", v);
    os << "  " << k << " = " << num << '\n';
  }
  for (const auto& [k, v] : meta.strings) print_string(os, k, v);

  std::vector<std::string> names;
  try {
    names = io::list_datasets(file.get());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  os << "datasets: " << names.size() << '\n';
  std::vector<float> buf;
  int64_t total = 0;
  for (const std::string& name : names) {
    H5Handle dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT));
    std::string status;
    std::vector<int64_t> shape;
    if (!dset.valid()) {
      status = "cannot open";
    } else {
      shape = io::dataset_shape(dset.get());
      try {
        const uint64_t stored = io::check_dataset(file.get(), path, name, {});
        // Whole dataset in row blocks of bounded size, as the parallel verifier does on one rank.
        const int64_t rows = shape.empty() ? 1 : shape[0];
        const int64_t row_bytes = std::max<int64_t>(4, 4 * io::num_elements(shape) / std::max<int64_t>(rows, 1));
        const int64_t step = std::max<int64_t>(1, io::kVerifyBlockBytes / row_bytes);
        uint64_t sum = 0;
        for (int64_t r = 0; r < rows; r += step)
          sum += io::rows_checksum(dset.get(), shape, r, std::min(rows, r + step), H5P_DEFAULT, buf);
        status = sum == stored ? "checksum " + hex(stored) + " ok"
                               : "checksum MISMATCH (stored " + hex(stored) + ", data " + hex(sum) + ")";
        if (sum != stored) ++bad;
        total += io::num_elements(shape);
      } catch (const Error& e) {
        std::string why = e.what();
        const std::string prefix = path + ": dataset '" + name + "'";
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size() + (why[prefix.size()] == ':' ? 2 : 1));
        status = "INVALID: " + why;
        ++bad;
      }
    }
    os << "  " << name << "  " << io::shape_str(shape) << "  " << status << '\n';
  }
  os << "elements: " << total << "  problems: " << bad << '\n';
  return bad;
}

}  // namespace

int inspect_checkpoint(const std::string& path, std::ostream& os, const CheckpointRequirements& req,
                       const std::string& requirements_problem) {
  io::H5Quiet quiet;
  const int listed = list_checkpoint(path, os);  // closes its serial handle before the verification opens the file
  std::string refused = requirements_problem;
  if (refused.empty()) {
    try {
      verify_checkpoint(MPI_COMM_SELF, path, req);
    } catch (const Error& e) {
      refused = e.what();
    }
  }
  os << (refused.empty() ? std::string("resume: accepted") : "resume: refused: " + refused) << '\n';
  // The listing sees nothing the verification does not (every dataset's type, checksum attribute and data).
  return refused.empty() && listed == 0 ? 0 : kExitError;
}

}  // namespace gt
