// save_checkpoint: one HDF5 file per step, every tensor in its global shape, each rank writing its own
// hyperslab collectively; committed by fsync + rename, then the `latest` pointer, then pruning.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "src/core/test_hooks.hpp"
#include "src/io/agree.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/checkpoint_files.hpp"
#include "src/io/checkpoint_reserve.hpp"
#include "src/io/checkpoint_space.hpp"
#include "src/io/checkpoint_verify.hpp"
#include "src/io/checksum.hpp"
#include "src/io/h5_error.hpp"
#include "src/io/h5_util.hpp"
#include "src/io/mpio_guard.hpp"
#include "src/io/shard_table.hpp"

namespace fs = std::filesystem;

namespace gt {
namespace {

using io::H5Handle;
using io::h5check;

// Rank 0's meta, sent to everyone: attribute writes are collective and must carry identical values.
CheckpointMeta broadcast_meta(MPI_Comm comm, const CheckpointMeta& meta) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string blob;  // kind(1) key\0 value\0 ..., numbers as text with full precision
  if (rank == 0) {
    char num[64];
    for (const auto& [k, v] : meta.ints) blob += "i" + k + '\0' + std::to_string(v) + '\0';
    for (const auto& [k, v] : meta.reals) {
      std::snprintf(num, sizeof num, "%.17g", v);
      blob += "r" + k + '\0' + num + '\0';
    }
    for (const auto& [k, v] : meta.strings) blob += "s" + k + '\0' + v + '\0';
  }
  int64_t len = static_cast<int64_t>(blob.size());
  MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm);
  blob.resize(len);
  MPI_Bcast(blob.data(), static_cast<int>(len), MPI_CHAR, 0, comm);
  CheckpointMeta out;
  size_t p = 0;
  while (p < blob.size()) {
    const char kind = blob[p++];
    const std::string key = blob.c_str() + p;
    p += key.size() + 1;
    const std::string value(blob.data() + p, blob.find('\0', p) - p);
    p += value.size() + 1;
    if (kind == 'i') out.ints[key] = std::stoll(value);
    if (kind == 'r') out.reals[key] = std::strtod(value.c_str(), nullptr);
    if (kind == 's') out.strings[key] = value;
  }
  return out;
}

// Test hook test_hooks::crash_in_checkpoint_step(): every rank is killed halfway through writing that step.
bool crash_requested(int64_t step) {
  return test_hooks::crash_in_checkpoint_step() == step;  // src/core/test_hooks.hpp
}

// Closes a .tmp file that is given up (an agreed error, so every rank is here). A close that fails leaves the
// file registered in HDF5, which closes it again inside MPI_Finalize and crashed there (segfault in
// H5F__close_cb). So the file is discarded first (mpio_guard.hpp: its writes succeed without I/O) and the close
// cannot fail on the disk; where nothing could be reserved, truncating it also frees the space already taken.
// The file is removed afterwards.
void discard_file(MPI_Comm comm, const std::string& tmp, hid_t file, bool reserved, io::GuardedFile& guard) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (!reserved && rank == 0 && ::truncate(tmp.c_str(), 0) != 0) { /* nothing more to free */ }
  MPI_Barrier(comm);
  guard.discard();
  if (H5Iis_valid(file) > 0) H5Fclose(file);
}

// The size the file can reach, from what it will hold: one function (checkpoint_space.hpp) for the start-up check
// and every save.
int64_t file_bytes(const CheckpointOptions& opt, const std::vector<io::TableEntry>& table, const CheckpointMeta& meta) {
  io::CheckpointFileShape shape;
  for (const io::TableEntry& e : table) shape.dataset_elements.push_back(io::num_elements(e.global_shape));
  for (const auto& [k, v] : meta.strings) shape.attribute_bytes += int64_t(k.size() + v.size());
  shape.attribute_bytes += 64 * int64_t(meta.ints.size() + meta.reals.size() + 2);  // + kind and version
  shape.alignment = opt.alignment;
  return io::checkpoint_file_bytes(shape);
}

void write_contents(MPI_Comm comm, const CheckpointOptions& opt, int64_t step, const std::string& tmp, H5Handle& file,
                    const std::vector<io::TableEntry>& table, const std::vector<TensorShard>& tensors,
                    const std::vector<uint64_t>& checksums, const CheckpointMeta& meta) {
  io::run_agreed(comm, [&] {
    io::write_attr_str(file.get(), "gridtrain_kind", "checkpoint");
    io::write_attr_i64(file.get(), "format_version", kCheckpointFormatVersion);
    io::write_meta_attrs(file.get(), meta);
  });

  H5Handle lcpl(h5check(H5Pcreate(H5P_LINK_CREATE), "cannot create property list"));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Handle dcpl(h5check(H5Pcreate(H5P_DATASET_CREATE), "cannot create property list"));
  H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS);
  H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
  H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);  // every element gets written: skip the fill pass
  H5Handle coll(h5check(H5Pcreate(H5P_DATASET_XFER), "cannot create property list"));
  H5Pset_dxpl_mpio(coll.get(), H5FD_MPIO_COLLECTIVE);
  H5Handle indep(h5check(H5Pcreate(H5P_DATASET_XFER), "cannot create property list"));
  H5Pset_dxpl_mpio(indep.get(), H5FD_MPIO_INDEPENDENT);

  // Every rank creates every dataset (HDF5 metadata calls are collective); a rank that failed keeps doing so
  // but writes nothing more, and the failure is agreed before the next collective transfer and at the end.
  io::DeferredErrors errors(comm);
  const bool crash = crash_requested(step);
  float dummy = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    if (crash && i == table.size() / 2) std::raise(SIGKILL);
    const io::TableEntry& e = table[i];
    const bool collective = io::use_collective(e.global_shape, opt);
    const std::vector<hsize_t> dims(e.global_shape.begin(), e.global_shape.end());
    H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    H5Handle dset(H5Dcreate2(file.get(), e.name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), dcpl.get(),
                             H5P_DEFAULT));
    errors.attempt([&] {
      h5check(space.get(), "cannot create dataspace");
      h5check(dset.get(), tmp + ": cannot create dataset '" + e.name + "'");
      io::write_attr_u64(dset.get(), "checksum", checksums[i]);
    });
    if (collective) errors.agree();
    else if (errors.failed()) continue;
    const TensorShard* t = e.local >= 0 ? &tensors[e.local] : nullptr;
    const bool mine = t && t->writer && io::shard_elements(*t) > 0;
    if (!mine && !collective) continue;
    errors.attempt([&] {
      H5Handle mem = io::select_shard_transfer(space.get(), mine ? t : nullptr);
      h5check(H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, mem.get(), space.get(), collective ? coll.get() : indep.get(),
                       mine ? t->data : &dummy),
              tmp + ": cannot write dataset '" + e.name + "'");
    });
  }
  errors.agree();
}

// Collective: fills the reserved .tmp file (an empty HDF5 file, reserve_checkpoint_file) and closes it.
void write_datasets(MPI_Comm comm, const CheckpointOptions& opt, int64_t step, const std::string& tmp, bool reserved,
                    const std::vector<io::TableEntry>& table, const std::vector<TensorShard>& tensors,
                    const std::vector<uint64_t>& checksums, const CheckpointMeta& meta) {
  H5Handle fapl = io::make_mpio_fapl(comm, opt);
  H5Handle file(H5Fopen(tmp.c_str(), H5F_ACC_RDWR, fapl.get()));
  io::agree(comm, file.valid() ? "" : tmp + ": cannot open the file reserved for the checkpoint" + io::h5_error_suffix());
  // HDF5's collective writes and resizes of this file agree their outcome over the ranks (an I/O error on one
  // rank hung the others inside the library); destroyed after the close.
  io::GuardedFile guard(file.get(), fapl.get(), comm);
  try {
    write_contents(comm, opt, step, tmp, file, table, tensors, checksums, meta);
  } catch (const Error&) {
    discard_file(comm, tmp, file.release(), reserved, guard);
    throw;
  }
  // The metadata out first, by a flush whose failure the ranks agree on (mpio_guard.hpp): the file is then
  // discarded and its close does no I/O. A close that fails instead leaves the file half-closed inside HDF5,
  // and closing it again (here or in MPI_Finalize) crashed.
  const bool flushed = H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0;
  int flush_failed = !flushed, any_flush_failed = 0;
  MPI_Allreduce(&flush_failed, &any_flush_failed, 1, MPI_INT, MPI_MAX, comm);
  if (any_flush_failed) {
    const std::string why = flushed ? "" : tmp + ": cannot write the file's metadata" + io::h5_error_suffix();
    discard_file(comm, tmp, file.release(), reserved, guard);
    io::agree(comm, why);  // throws: the ranks whose flush failed carry HDF5's reason
    throw Error(tmp + ": cannot write the file's metadata");
  }
  // Closing writes what the flush left (little: the file's size); a failure must not look like success.
  const hid_t id = file.release();
  const herr_t closed = H5Fclose(id);
  std::string why = closed >= 0 ? "" : tmp + ": cannot close file (I/O error or disk full)" + io::h5_error_suffix();
  int failed = closed < 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
  if (any) discard_file(comm, tmp, id, reserved, guard);
  io::agree(comm, why);
}

std::string save_impl(MPI_Comm comm, const CheckpointOptions& opt, int64_t step,
                      const std::vector<TensorShard>& tensors, const CheckpointMeta& meta_in, const std::string& tmp) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string final_path = (fs::path(opt.dir) / io::checkpoint_file_name(step)).string();

  io::run_agreed(comm, [&] {
    if (step < 0) throw Error("checkpoint: negative step " + std::to_string(step));
    if (rank == 0) {
      std::error_code ec;
      fs::create_directories(opt.dir, ec);
      if (!fs::is_directory(opt.dir)) throw Error(opt.dir + ": cannot create checkpoint directory: " + ec.message());
    }
  });
  const std::vector<io::TableEntry> table = io::gather_shard_table(comm, tensors);
  for (const io::TableEntry& e : table)  // identical on every rank, so every rank throws the same
    if (!e.tiled) throw Error("checkpoint: tensor '" + e.name + "': " + e.tiling_problem);
  CheckpointMeta meta = broadcast_meta(comm, meta_in);
  meta.ints["step"] = step;
  meta.ints.erase("format_version");
  meta.strings.erase("gridtrain_kind");

  // A state holding NaN or inf cannot be resumed from; writing it would only push a good checkpoint out by
  // pruning. Each rank checks the shards it writes.
  io::run_agreed(comm, [&] {
    for (const TensorShard& t : tensors) {
      if (!t.writer) continue;
      try {
        io::check_finite(final_path, t.name, t.data, io::shard_elements(t), -1);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + "; not saved, the previous checkpoints are kept");
      }
    }
  });

  // Checksums from memory, before the write: the file is later checked against what the model held.
  std::vector<uint64_t> partial(table.size(), 0), checksums(table.size(), 0);
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].local < 0) continue;
    const TensorShard& t = tensors[table[i].local];
    if (t.writer) partial[i] = io::shard_checksum(t);
  }
  MPI_Allreduce(partial.data(), checksums.data(), static_cast<int>(table.size()), MPI_UINT64_T, MPI_SUM, comm);

  // Before any collective HDF5 call: `latest`'s new text and the room of the whole file, taken by rank 0 and
  // agreed, so that a disk filling from here on cannot fail a write of this save on one rank only (which hung
  // the ranks inside HDF5's close).
  int reserved = 0;
  io::run_agreed(comm, [&] {
    if (rank != 0) return;
    io::stage_file_atomic(opt.dir, "latest", io::checkpoint_file_name(step) + "\n");
    reserved = io::reserve_checkpoint_file(opt.dir, tmp, file_bytes(opt, table, meta));
  });
  MPI_Bcast(&reserved, 1, MPI_INT, 0, comm);
  write_datasets(comm, opt, step, tmp, reserved != 0, table, tensors, checksums, meta);

  if (opt.verify_after_write) {
    H5Handle file = io::open_checkpoint_file(comm, tmp);
    std::vector<std::string> names;
    for (const io::TableEntry& e : table) names.push_back(e.name);
    io::compare_checksums(comm, tmp, names, io::partial_checksums_by_rows(comm, file.get(), tmp, names), checksums);
  }
  io::run_agreed(comm, [&] { io::fsync_path(tmp); });  // each rank: its node's cached pages reach the disk
  io::run_agreed(comm, [&] {
    if (rank != 0) return;
    io::durable_rename(tmp, final_path, opt.dir);
    io::commit_file_atomic(opt.dir, "latest");
    io::prune_checkpoints(opt.dir, opt.keep, final_path);
  });
  return final_path;
}

}  // namespace

std::string save_checkpoint(MPI_Comm comm, const CheckpointOptions& opt, int64_t step,
                            const std::vector<TensorShard>& tensors, const CheckpointMeta& meta) {
  io::H5Quiet quiet;
  const std::string tmp = (fs::path(opt.dir) / io::checkpoint_file_name(step)).string() + ".tmp";
  try {
    return save_impl(comm, opt, step, tensors, meta, tmp);
  } catch (const Error&) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::error_code ec;
    if (rank == 0) {  // never leave a half-written file behind an error we report
      fs::remove(tmp, ec);
      fs::remove(fs::path(opt.dir) / "latest.tmp", ec);
    }
    throw;
  }
}

}  // namespace gt
