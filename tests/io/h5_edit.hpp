#pragma once
// In-place edits of a checkpoint file for the damage tests (checkpoint_resume_test, the checkpoint_damage tool):
// a dataset replaced or deleted, one value changed. Each rewrites the dataset's checksum with the test-side
// formula (io_test_util.hpp, never the library's), so the edit itself is the only defect. Plain serial HDF5.
#include <hdf5.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/io/io_test_util.hpp"

namespace iotest {

inline hid_t h5_open_rw(const std::string& path) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("cannot open " + path);
  return f;
}

// (Re)writes the dataset's checksum attribute as the test-side formula gives it for v.
inline void h5_set_checksum(hid_t d, const std::vector<float>& v) {
  if (H5Aexists(d, "checksum") > 0) H5Adelete(d, "checksum");
  const hid_t s = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(d, "checksum", H5T_STD_U64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  const uint64_t sum = reference_checksum(v);
  H5Awrite(a, H5T_NATIVE_UINT64, &sum);
  H5Aclose(a);
  H5Sclose(s);
}

// Replaces dataset `name` by one of `shape` and file type `type` (values 0.5, a matching checksum); deletes it
// when shape is empty.
inline void h5_replace_dataset(const std::string& path, const std::string& name, std::vector<hsize_t> shape,
                               hid_t type = H5T_IEEE_F32LE) {
  const hid_t f = h5_open_rw(path);
  H5Ldelete(f, name.c_str(), H5P_DEFAULT);
  if (!shape.empty()) {
    hsize_t n = 1;
    for (hsize_t d : shape) n *= d;
    std::vector<float> v(n, 0.5f);
    const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
    const hid_t d = H5Dcreate2(f, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    h5_set_checksum(d, v);
    H5Dclose(d);
    H5Sclose(space);
  }
  H5Fclose(f);
}

// Element `at` of dataset `name` set to value, the checksum rewritten to match.
inline void h5_poke(const std::string& path, const std::string& name, size_t at, float value) {
  const hid_t f = h5_open_rw(path);
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  std::vector<float> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  v.at(at) = value;
  H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  h5_set_checksum(d, v);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

// One byte of dataset `name`'s raw data flipped (offset + 5), behind HDF5's back: the checksum no longer matches.
inline void h5_flip_in_dataset(const std::string& path, const std::string& name) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  const haddr_t offset = H5Dget_offset(d);
  H5Dclose(d);
  H5Fclose(f);
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(offset + 5));
  char c = 0;
  io.read(&c, 1);
  c ^= 0x40;
  io.seekp(static_cast<std::streamoff>(offset + 5));
  io.write(&c, 1);
}

}  // namespace iotest
