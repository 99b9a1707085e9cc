#pragma once
// The one module of HDF5 helpers, for checkpoints (save, load, inspect) and token datasets (reader, writer):
// an owning handle, a scope that silences HDF5's error-stack printing (we report our own one-line errors),
// attributes (scalars; lists with errors naming the file), dataset shape and type checks.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/io/checkpoint.hpp"

namespace gt::io {

// Owns one hid_t and closes it with the matching H5?close. Moveable, not copyable.
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  H5Handle(H5Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  H5Handle& operator=(H5Handle&& o) noexcept;
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  hid_t release() {  // gives up ownership (e.g. to close it with a checked call)
    hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
};

// Throws gt::Error(what) when an HDF5 call returned a negative id/status.
hid_t h5check(hid_t id, const std::string& what);

// Turns off HDF5's automatic error printing for its lifetime and restores the previous handler after.
class H5Quiet {
 public:
  H5Quiet();
  ~H5Quiet();
  H5Quiet(const H5Quiet&) = delete;
  H5Quiet& operator=(const H5Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Attributes of an object (the root group or a dataset).
void write_attr_i64(hid_t obj, const std::string& name, int64_t v);
void write_attr_u64(hid_t obj, const std::string& name, uint64_t v);
void write_attr_f64(hid_t obj, const std::string& name, double v);
void write_attr_str(hid_t obj, const std::string& name, const std::string& v);
bool has_attr(hid_t obj, const std::string& name);
int64_t read_attr_i64(hid_t obj, const std::string& name);
uint64_t read_attr_u64(hid_t obj, const std::string& name);
std::string read_attr_str(hid_t obj, const std::string& name);

// All attributes of obj sorted into ints (integer class), reals (float class) and strings.
CheckpointMeta read_all_attrs(hid_t obj);
void write_meta_attrs(hid_t obj, const CheckpointMeta& meta);

// Paths of all datasets under the root, in name order ("params/wte", ...).
std::vector<std::string> list_datasets(hid_t file);
bool dataset_exists(hid_t file, const std::string& path);  // checks each group on the way
std::vector<int64_t> dataset_shape(hid_t dset);
bool dataset_is_float32(hid_t dset);
std::string dataset_type_name(hid_t dset);  // "float32", "float64", "int32", ... for messages
std::string shape_str(const std::vector<int64_t>& shape);  // "(768,3072)"

// Selects the hyperslab [start, start + count) of space, or nothing when select is false.
void select_box(hid_t space, const std::vector<int64_t>& start, const std::vector<int64_t>& count, bool select);

// Attribute lists and scalars for the dataset files. Readers throw "<file>: missing attribute NAME" /
// "<file>: attribute NAME is not ..."; string readers accept fixed- and variable-length strings.
bool has_link(hid_t loc, const std::string& name);  // each group on the way exists
// A damaged dataspace can claim any number of elements: the readers refuse an attribute whose value would take more
// memory than this (far above any we write: a GPT-2 vocabulary as a string list is ~0.4 MB of pointers) instead of
// asking the allocator for it (fuzz_dataset found a damaged file that made a reader ask for 16 GiB).
constexpr hsize_t kMaxAttrBytes = 64ull << 20;
std::string read_attr_string(hid_t loc, const std::string& name, const std::string& file);
int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& file);
std::vector<std::string> read_attr_strings(hid_t loc, const std::string& name, const std::string& file);
std::vector<uint64_t> read_attr_u64s(hid_t loc, const std::string& name, const std::string& file);
std::vector<int64_t> read_attr_i64s(hid_t loc, const std::string& name, const std::string& file);
// Writers: variable-length UTF-8 strings, little-endian 64-bit integers; an empty list is a null dataspace.
void write_attr_string(hid_t loc, const std::string& name, const std::string& value);
void write_attr_int(hid_t loc, const std::string& name, int64_t value);
void write_attr_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
void write_attr_u64s(hid_t loc, const std::string& name, const std::vector<uint64_t>& values);
void write_attr_i64s(hid_t loc, const std::string& name, const std::vector<int64_t>& values);

}  // namespace gt::io
