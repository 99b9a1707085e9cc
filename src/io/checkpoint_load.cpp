// Reading checkpoints: load (any layout reads its own hyperslabs), meta only, whole-file verification.

#include "src/io/agree.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/checkpoint_verify.hpp"
#include "src/io/checksum.hpp"
#include "src/io/h5_util.hpp"
#include "src/io/shard_table.hpp"

namespace gt {

using io::H5Handle;
using io::h5check;

void load_checkpoint(MPI_Comm comm, const std::string& path, std::vector<TensorShard>& tensors,
                     CheckpointMeta& meta, const CheckpointOptions& read_opt) {
  io::H5Quiet quiet;
  const std::vector<io::TableEntry> table = io::gather_shard_table(comm, tensors);
  H5Handle file = io::open_checkpoint_file(comm, path);

  // Metadata checks first (rank-local reads of the same bytes), so no rank enters a collective read of a
  // dataset that another rank found wrong.
  std::vector<uint64_t> expected(table.size(), 0);
  CheckpointMeta file_meta;
  io::run_agreed(comm, [&] {
    file_meta = io::read_checkpoint_root(file.get(), path);
    for (size_t i = 0; i < table.size(); ++i)
      expected[i] = io::check_dataset(file.get(), path, table[i].name, table[i].global_shape);
  });

  H5Handle coll(h5check(H5Pcreate(H5P_DATASET_XFER), "cannot create transfer list"));
  H5Pset_dxpl_mpio(coll.get(), H5FD_MPIO_COLLECTIVE);
  H5Handle indep(h5check(H5Pcreate(H5P_DATASET_XFER), "cannot create transfer list"));
  H5Pset_dxpl_mpio(indep.get(), H5FD_MPIO_INDEPENDENT);
  io::DeferredErrors errors(comm);
  float dummy = 0;
  for (const io::TableEntry& e : table) {
    const bool collective = io::use_collective(e.global_shape, read_opt);
    if (collective) errors.agree();
    TensorShard* t = e.local >= 0 ? &tensors[e.local] : nullptr;
    const bool mine = t && io::shard_elements(*t) > 0;
    if (!mine && !collective) continue;
    errors.attempt([&] {
      H5Handle dset(h5check(H5Dopen2(file.get(), e.name.c_str(), H5P_DEFAULT),
                            path + ": cannot open dataset '" + e.name + "'"));
      H5Handle space(h5check(H5Dget_space(dset.get()), path + ": cannot read dataspace of '" + e.name + "'"));
      H5Handle mem = io::select_shard_transfer(space.get(), mine ? t : nullptr);
      h5check(H5Dread(dset.get(), H5T_NATIVE_FLOAT, mem.get(), space.get(), collective ? coll.get() : indep.get(),
                      mine ? t->data : &dummy),
              path + ": cannot read dataset '" + e.name + "'");
    });
  }
  errors.agree();

  // Every dataset is verified in full. Where the loading layout's writer hyperslabs tile a tensor exactly,
  // the data just read already covers it once: its checksum needs no second read. The rest (partial or
  // replicated layouts without writer marks) are re-read split evenly by rows over the ranks.
  std::vector<uint64_t> partial(table.size(), 0);
  std::vector<std::string> reread_names;
  std::vector<size_t> reread_index;
  for (size_t i = 0; i < table.size(); ++i) {
    const io::TableEntry& e = table[i];
    if (!e.tiled) {
      reread_names.push_back(e.name);
      reread_index.push_back(i);
    } else if (e.local >= 0 && tensors[e.local].writer) {
      const TensorShard& t = tensors[e.local];
      partial[i] = io::shard_checksum(t);
    }
  }
  const std::vector<uint64_t> reread = io::partial_checksums_by_rows(comm, file.get(), path, reread_names);
  for (size_t k = 0; k < reread.size(); ++k) partial[reread_index[k]] = reread[k];
  std::vector<std::string> names;
  for (const io::TableEntry& e : table) names.push_back(e.name);
  io::compare_checksums(comm, path, names, partial, expected);
  // A NaN or inf with a valid checksum (saved by a diverged run, or written by a tool) would resume into a run
  // that trains on NaN: an error naming the tensor.
  io::run_agreed(comm, [&] {
    for (const TensorShard& t : tensors) io::check_finite(path, t.name, t.data, io::shard_elements(t), -1);
  });
  meta = file_meta;
}

CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path) {
  io::H5Quiet quiet;
  H5Handle file = io::open_checkpoint_file(comm, path);
  CheckpointMeta meta;
  io::run_agreed(comm, [&] { meta = io::read_checkpoint_root(file.get(), path); });
  return meta;
}

CheckpointMeta verify_checkpoint(MPI_Comm comm, const std::string& path, const CheckpointRequirements& req) {
  io::H5Quiet quiet;
  H5Handle file = io::open_checkpoint_file(comm, path);
  CheckpointMeta meta;
  std::vector<std::string> names;
  std::vector<uint64_t> expected;
  io::run_agreed(comm, [&] {
    meta = io::read_checkpoint_root(file.get(), path);
    check_checkpoint_meta(path, meta, req);
    // The model's datasets first, each with its shape: a missing or reshaped tensor is named as such.
    for (const CheckpointRequirements::Dataset& d : req.datasets) io::check_dataset(file.get(), path, d.name, d.global_shape);
    names = io::list_datasets(file.get());
    for (const std::string& name : names) expected.push_back(io::check_dataset(file.get(), path, name, {}));
  });
  io::compare_checksums(comm, path, names, io::partial_checksums_by_rows(comm, file.get(), path, names), expected);
  return meta;
}

}  // namespace gt
