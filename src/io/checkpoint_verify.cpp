#include "src/io/checkpoint_verify.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "src/io/agree.hpp"
#include "src/io/checksum.hpp"
#include "src/io/finite.hpp"
#include "src/io/h5_error.hpp"
#include "src/io/h5_probe.hpp"
#include "src/io/shard_table.hpp"

namespace gt::io {

bool use_collective(const std::vector<int64_t>& global_shape, const CheckpointOptions& opt) {
  return num_elements(global_shape) * int64_t(sizeof(float)) >= opt.collective_min_bytes;
}

H5Handle make_mpio_fapl(MPI_Comm comm, const CheckpointOptions& opt) {
  H5Handle fapl(h5check(H5Pcreate(H5P_FILE_ACCESS), "cannot create file access list"));
  MPI_Info info = MPI_INFO_NULL;
  if (!opt.mpi_hints.empty()) {
    MPI_Info_create(&info);
    for (const auto& [k, v] : opt.mpi_hints) MPI_Info_set(info, k.c_str(), v.c_str());
  }
  const herr_t rc = H5Pset_fapl_mpio(fapl.get(), comm, info);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  h5check(rc, "cannot set the MPI-IO driver");
  // Large tensors start on alignment boundaries: whole file-system blocks / stripes per write.
  if (opt.alignment > 1) H5Pset_alignment(fapl.get(), 1 << 20, opt.alignment);
  // Metadata is written once at close by one aggregated write instead of many small ones.
  H5Pset_coll_metadata_write(fapl.get(), true);
  // 1.8 format lets attributes exceed 64 KiB (long config text) and is read by every current tool.
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  return fapl;
}

H5Handle open_checkpoint_file(MPI_Comm comm, const std::string& path) {
  std::string problem;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) problem = path + ": no such file";
  agree(comm, problem);
  H5Handle fapl = make_mpio_fapl(comm, CheckpointOptions{});
  // Every rank sees the same bytes, so H5Fopen fails on all ranks or none; agree anyway.
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  agree(comm, file.valid() ? "" : path + ": not a readable HDF5 file" + h5_error_suffix());
  return file;
}

void check_hdf5_survives(MPI_Comm comm, const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    std::error_code ec;
    // A missing file is open_checkpoint_file's to report, with its own words.
    if (std::filesystem::is_regular_file(path, ec)) problem = hdf5_probe_problem(path);
    if (!problem.empty()) problem = path + ": " + problem;
  }
  agree(comm, problem);
}

namespace {
// Whether the root attribute exists; a damaged object header (a flipped byte) is an HDF5 error, not absence.
bool root_attr_exists(hid_t file, const std::string& path, const char* name) {
  const htri_t rc = H5Aexists(file, name);
  if (rc < 0) throw Error(path + ": cannot read root attribute '" + name + "'" + h5_error_suffix());
  return rc > 0;
}
}  // namespace

CheckpointMeta read_checkpoint_root(hid_t file, const std::string& path) {
  const auto fail = [&](const std::string& what) { return Error(path + ": " + what); };
  if (!root_attr_exists(file, path, "gridtrain_kind"))
    throw fail("missing root attribute 'gridtrain_kind' (not a gridtrain file)");
  std::string kind;
  try {
    kind = read_attr_str(file, "gridtrain_kind");
  } catch (const Error& e) {
    throw fail(e.what());
  }
  if (kind != "checkpoint") throw fail("not a checkpoint (gridtrain_kind is '" + kind + "')");
  if (!root_attr_exists(file, path, "format_version")) throw fail("missing root attribute 'format_version'");
  int64_t version = 0;
  try {
    version = read_attr_i64(file, "format_version");
  } catch (const Error& e) {
    throw fail(e.what());
  }
  if (version != kCheckpointFormatVersion)
    throw fail("format_version " + std::to_string(version) + " is not supported (this build reads " +
               std::to_string(kCheckpointFormatVersion) + ")");
  try {
    return read_all_attrs(file);
  } catch (const Error& e) {
    throw fail(e.what() + h5_error_suffix());
  }
}

uint64_t check_dataset(hid_t file, const std::string& path, const std::string& name,
                       const std::vector<int64_t>& expected_shape) {
  const std::string what = path + ": dataset '" + name + "'";
  if (!dataset_exists(file, name)) throw Error(what + " is missing");
  H5Handle dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!dset.valid()) throw Error(what + " cannot be opened");
  if (!dataset_is_float32(dset.get()))
    throw Error(what + " has dtype " + dataset_type_name(dset.get()) + ", expected float32");
  const std::vector<int64_t> shape = dataset_shape(dset.get());
  if (!expected_shape.empty() && shape != expected_shape)
    throw Error(what + ": shape " + shape_str(shape) + " does not match the model's " + shape_str(expected_shape));
  if (!has_attr(dset.get(), "checksum")) throw Error(what + " has no 'checksum' attribute");
  try {
    return read_attr_u64(dset.get(), "checksum");
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

uint64_t rows_checksum(hid_t dset, const std::vector<int64_t>& shape, int64_t r0, int64_t r1, hid_t dxpl,
                       std::vector<float>& buf) {
  const int64_t row_elems = shape.empty() ? 1 : num_elements(shape) / std::max<int64_t>(shape[0], 1);
  std::vector<int64_t> start(shape.size(), 0), count = shape;
  const bool any = !shape.empty() && r1 > r0 && row_elems > 0;
  if (!shape.empty()) {
    start[0] = r0;
    count[0] = r1 - r0;
  }
  const size_t n = any ? static_cast<size_t>((r1 - r0) * row_elems) : 0;
  buf.resize(std::max<size_t>(n, 1));
  H5Handle file_space(h5check(H5Dget_space(dset), "cannot read dataspace"));
  select_box(file_space.get(), start, count, any);
  const hsize_t mem_n = std::max<size_t>(n, 1);
  H5Handle mem_space(h5check(H5Screate_simple(1, &mem_n, nullptr), "cannot create dataspace"));
  if (!any) H5Sselect_none(mem_space.get());
  h5check(H5Dread(dset, H5T_NATIVE_FLOAT, mem_space.get(), file_space.get(), dxpl, buf.data()), "read failed");
  return any ? range_checksum(buf.data(), static_cast<uint64_t>(r0 * row_elems), n) : 0;
}

std::vector<uint64_t> partial_checksums_by_rows(MPI_Comm comm, hid_t file, const std::string& path,
                                               const std::vector<std::string>& names) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  H5Handle dxpl(h5check(H5Pcreate(H5P_DATASET_XFER), "cannot create transfer list"));
  H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_INDEPENDENT);
  std::vector<uint64_t> partial(names.size(), 0);
  std::vector<float> buf;
  DeferredErrors errors(comm);
  for (size_t i = 0; i < names.size(); ++i) {
    errors.attempt([&] {
      H5Handle dset(h5check(H5Dopen2(file, names[i].c_str(), H5P_DEFAULT),
                            path + ": cannot open dataset '" + names[i] + "'"));
      const std::vector<int64_t> shape = dataset_shape(dset.get());
      const int64_t rows = shape.empty() ? 1 : shape[0];
      const int64_t bytes = num_elements(shape) * 4;
      const int64_t rounds = std::max<int64_t>(1, (bytes + size * kVerifyBlockBytes - 1) / (size * kVerifyBlockBytes));
      const int64_t pieces = rounds * size;
      for (int64_t round = 0; round < rounds; ++round) {
        const int64_t k = round * size + rank;
        const int64_t r0 = k * rows / pieces, r1 = (k + 1) * rows / pieces;
        if (r1 <= r0) continue;
        partial[i] += rows_checksum(dset.get(), shape, r0, r1, dxpl.get(), buf);
        const int64_t row_elems = num_elements(shape) / rows;
        check_finite(path, names[i], buf.data(), (r1 - r0) * row_elems, r0 * row_elems);
      }
    });
  }
  errors.agree();
  return partial;
}

void check_finite(const std::string& path, const std::string& name, const float* data, int64_t n, int64_t first) {
  const int64_t bad = first_nonfinite(data, n);
  if (bad < 0) return;
  char v[32];
  std::snprintf(v, sizeof v, "%g", static_cast<double>(data[bad]));
  throw Error(path + ": dataset '" + name + "' holds a non-finite value (" + v +
              (first >= 0 ? " at element " + std::to_string(first + bad) : std::string()) + ")");
}

void compare_checksums(MPI_Comm comm, const std::string& path, const std::vector<std::string>& names,
                       std::vector<uint64_t> partials, const std::vector<uint64_t>& expected) {
  std::vector<uint64_t> total(partials.size(), 0);
  MPI_Allreduce(partials.data(), total.data(), static_cast<int>(partials.size()), MPI_UINT64_T, MPI_SUM, comm);
  for (size_t i = 0; i < names.size(); ++i)
    if (total[i] != expected[i]) throw Error(path + ": checksum mismatch in dataset '" + names[i] + "'");
}

}  // namespace gt::io
