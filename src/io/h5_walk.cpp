#include "src/io/h5_walk.hpp"

#include <hdf5.h>

#include <cstdint>
#include <exception>
#include <vector>

#include "src/io/checkpoint_verify.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

namespace {

// Reads the whole value of one attribute in its native memory type, then gives back what HDF5 allocated for
// variable-length parts (strings in the global heap).
void read_attribute_value(hid_t attr) {
  H5Handle type(H5Aget_type(attr));
  H5Handle space(H5Aget_space(attr));
  if (!type.valid() || !space.valid()) return;
  H5Handle mem(H5Tget_native_type(type.get(), H5T_DIR_ASCEND));
  if (!mem.valid()) return;
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  const size_t elem = H5Tget_size(mem.get());
  // A damaged dataspace can claim any size: values the readers refuse (kMaxAttrBytes) are not read either, and a
  // failed allocation here would be mistaken for a crash of the library.
  if (n <= 0 || elem == 0 || hsize_t(n) > kMaxAttrBytes / elem) return;
  std::vector<unsigned char> buf(size_t(n) * elem);
  if (H5Aread(attr, mem.get(), buf.data()) < 0) return;
  const bool vlen = H5Tdetect_class(mem.get(), H5T_VLEN) > 0 || H5Tis_variable_str(mem.get()) > 0;
  if (vlen) H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buf.data());
}

herr_t visit_attribute(hid_t obj, const char* name, const H5A_info_t*, void*) {
  H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT));
  if (attr.valid()) read_attribute_value(attr.get());
  return 0;  // go on with the next attribute whatever happened
}

// Every attribute of obj, by name order (as read_all_attrs) and by position (H5Aopen_by_idx, as it opens them).
void read_attributes(hid_t obj) {
  hsize_t idx = 0;
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, visit_attribute, nullptr);
  H5O_info_t info;
  if (H5Oget_info2(obj, &info, H5O_INFO_NUM_ATTRS) < 0) return;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    H5Handle attr(H5Aopen_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT));
    if (attr.valid()) read_attribute_value(attr.get());
  }
}

// The first and the last element of a dataset: enough to make HDF5 parse its layout (and the chunk index of a
// chunked one at both ends) without reading the data twice.
void read_end_elements(hid_t dset) {
  H5Handle type(H5Dget_type(dset));
  H5Handle space(H5Dget_space(dset));
  H5Handle dcpl(H5Dget_create_plist(dset));
  if (!type.valid() || !space.valid()) return;
  H5Handle mem(H5Tget_native_type(type.get(), H5T_DIR_ASCEND));
  const int nd = H5Sget_simple_extent_ndims(space.get());
  if (!mem.valid() || nd <= 0 || nd > 32 || H5Tget_size(mem.get()) > 4096) return;
  std::vector<hsize_t> dims(nd);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<hsize_t> coords(2 * size_t(nd));
  for (int d = 0; d < nd; ++d) {
    if (dims[d] == 0) return;
    coords[d] = 0;
    coords[nd + d] = dims[d] - 1;
  }
  if (H5Sselect_elements(space.get(), H5S_SELECT_SET, 2, coords.data()) < 0) return;
  const hsize_t two = 2;
  H5Handle mem_space(H5Screate_simple(1, &two, nullptr));
  std::vector<unsigned char> buf(2 * H5Tget_size(mem.get()));
  if (H5Dread(dset, mem.get(), mem_space.get(), space.get(), H5P_DEFAULT, buf.data()) < 0) return;
  if (H5Tdetect_class(mem.get(), H5T_VLEN) > 0 || H5Tis_variable_str(mem.get()) > 0)
    H5Dvlen_reclaim(mem.get(), mem_space.get(), H5P_DEFAULT, buf.data());
}

herr_t visit_object(hid_t root, const char* name, const H5O_info_t* info, void*) {
  H5Handle obj(H5Oopen(root, name, H5P_DEFAULT));
  if (!obj.valid()) return 0;
  read_attributes(obj.get());
  if (info->type == H5O_TYPE_DATASET) read_end_elements(obj.get());
  return 0;
}

}  // namespace

void walk_hdf5_metadata(const std::string& path) {
  H5Quiet quiet;
  // Which call trips a damaged file depends on what the library has cached from the calls before it (the
  // global heap of dataset_global_heap_hang.h5 hangs the first string read of a fresh open, not one after the
  // other attributes), so the readers' own sequences each get a fresh open, then the walk over everything.
  // Errors HDF5 returns end one read, not the pass: a later read may be the one that crashes.
  const auto attempt = [](auto&& read) {
    try {
      read();
    } catch (const std::exception&) {
    }
  };
  for (int pass = 0; pass < 3; ++pass) {
    H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!file.valid()) return;
    const hid_t f = file.get();
    try {
      if (pass == 0) {  // hdf5_file_kind (inspect), read_checkpoint_root (verify, load)
        if (has_attr(f, "gridtrain_kind")) attempt([&] { read_attr_str(f, "gridtrain_kind"); });
        attempt([&] { read_all_attrs(f); });
        for (const std::string& name : list_datasets(f)) attempt([&] { check_dataset(f, path, name, {}); });
      } else if (pass == 1) {  // DatasetFile (token datasets)
        if (!has_attr(f, "gridtrain_kind")) continue;
        read_attr_string(f, "gridtrain_kind", path);
        attempt([&] { read_attr_string(f, "tokenizer", path); });
        for (const char* name : {"format_version", "vocab_size", "eot_id"})
          attempt([&] { read_attr_int(f, name, path); });
        attempt([&] { read_attr_strings(f, "source_files", path); });
        for (const char* name : {"source_bytes", "source_split"}) attempt([&] { read_attr_i64s(f, name, path); });
        for (const char* name : {"source_fnv1a64", "corpus_fnv1a64"}) attempt([&] { read_attr_u64s(f, name, path); });
      } else {
        H5Aexists(f, "gridtrain_kind");
        read_attributes(f);
        // Every object under the root (the root itself comes first: its attributes again, cheap).
        H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit_object, nullptr, H5O_INFO_BASIC);
      }
    } catch (const std::exception&) {
      // an error HDF5 returned: the readers will report it
    }
    // Closing is part of the walk: HDF5 flushes and frees its metadata cache there.
    H5Fclose(file.release());
  }
}

}  // namespace gt::io
