#pragma once
// Small RAII helpers over the HDF5 C API for the dataset reader and writer (serial access, no MPI-IO).
// Every failure becomes gt::Error "<file>: <problem>"; HDF5's own error-stack printing is switched off for
// the duration of each public data call (H5Quiet) and restored afterwards.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gt::h5 {

// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) { reset(); id_ = o.id_; o.id_ = H5I_INVALID_HID; }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  hid_t release() { hid_t id = id_; id_ = H5I_INVALID_HID; return id; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Switches HDF5's automatic error printing off in this scope.
class Quiet {
 public:
  Quiet();
  ~Quiet();
 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

bool has_link(hid_t loc, const std::string& name);
bool has_attr(hid_t loc, const std::string& name);

// Attribute readers: throw "<file>: missing attribute NAME" / "attribute NAME is not a ...".
std::string read_attr_string(hid_t loc, const std::string& name, const std::string& file);
int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& file);
std::vector<std::string> read_attr_strings(hid_t loc, const std::string& name, const std::string& file);
std::vector<uint64_t> read_attr_u64s(hid_t loc, const std::string& name, const std::string& file);
std::vector<int64_t> read_attr_i64s(hid_t loc, const std::string& name, const std::string& file);

void write_attr_string(hid_t loc, const std::string& name, const std::string& value);
void write_attr_int(hid_t loc, const std::string& name, int64_t value);
void write_attr_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
void write_attr_u64s(hid_t loc, const std::string& name, const std::vector<uint64_t>& values);
void write_attr_i64s(hid_t loc, const std::string& name, const std::vector<int64_t>& values);

}  // namespace gt::h5
