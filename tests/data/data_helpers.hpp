#pragma once
// Helpers of the data tests that do not go through the code under test: raw HDF5 reads (plain C API, HDF5
// doing the type conversion), an FNV-1a 64 written from its definition, child processes with their peak RSS,
// and a dataset whose token at position p is p (so a read window reveals where it came from).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fcntl.h>
#include <string>
#include <type_traits>
#include <vector>

#include "src/data/dataset_writer.hpp"

namespace gt::test {

// FNV-1a 64 (http://www.isthe.com/chongo/tech/comp/fnv/): offset basis 14695981039346656037, prime 2^40 + 435.
inline uint64_t ref_fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

struct RawDataset {
  bool exists = false;
  H5T_class_t cls = H5T_NO_CLASS;
  size_t bytes = 0;
  bool is_signed = false;
  bool little_endian = false;
  std::vector<uint64_t> u64;  // the values, converted by HDF5 (integer datasets only)
};

// Reads the whole 1-D dataset `name` of `file` with the plain HDF5 API.
inline RawDataset raw_dataset(const std::string& file, const std::string& name) {
  RawDataset r;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return r;
  if (H5Lexists(f, name.c_str(), H5P_DEFAULT) > 0) {
    hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    r.exists = true;
    r.cls = H5Tget_class(t);
    r.bytes = H5Tget_size(t);
    r.is_signed = r.cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2;
    r.little_endian = H5Tget_order(t) == H5T_ORDER_LE;
    hid_t s = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, nullptr);
    r.u64.resize(n);
    if (n && r.cls == H5T_INTEGER) {
      const hid_t mtype = r.is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
      EXPECT_GE(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.u64.data()), 0) << file << " " << name;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
  }
  H5Fclose(f);
  return r;
}

inline bool raw_has_attr(const std::string& file, const std::string& name) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool has = f >= 0 && H5Aexists(f, name.c_str()) > 0;
  if (f >= 0) H5Fclose(f);
  return has;
}

// Root attribute as integers (any integer type, scalar or 1-D), converted by HDF5 to int64 / uint64.
template <class T>
inline std::vector<T> raw_attr_ints(const std::string& file, const std::string& name) {
  std::vector<T> v;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t a = H5Aopen(f, name.c_str(), H5P_DEFAULT);
  hid_t s = H5Aget_space(a);
  v.resize(size_t(H5Sget_simple_extent_npoints(s)));
  const hid_t mtype = std::is_signed<T>::value ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
  if (!v.empty()) {
    EXPECT_GE(H5Aread(a, mtype, v.data()), 0) << file << " attribute " << name;
  }
  H5Sclose(s);
  H5Aclose(a);
  H5Fclose(f);
  return v;
}

// Root attribute as variable-length strings (scalar or 1-D).
inline std::vector<std::string> raw_attr_strings(const std::string& file, const std::string& name) {
  std::vector<std::string> out;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t a = H5Aopen(f, name.c_str(), H5P_DEFAULT);
  hid_t s = H5Aget_space(a);
  const size_t n = size_t(H5Sget_simple_extent_npoints(s));
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  std::vector<char*> p(n, nullptr);
  if (n) {
    EXPECT_GE(H5Aread(a, t, p.data()), 0) << file << " attribute " << name;
  }
  for (char* c : p) out.emplace_back(c ? c : "");
  if (n) H5Dvlen_reclaim(t, s, H5P_DEFAULT, p.data());
  H5Tclose(t);
  H5Sclose(s);
  H5Aclose(a);
  H5Fclose(f);
  return out;
}

struct ChildResult {
  int exit_code = -1;     // -1: killed by a signal
  long max_rss_kib = 0;   // peak resident set of the child (getrusage ru_maxrss)
};

// Runs argv[0] with stdout and stderr redirected to files; waits for it.
inline ChildResult run_child(const std::vector<std::string>& argv, const std::string& out_path,
                             const std::string& err_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  ChildResult r;
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.max_rss_kib = ru.ru_maxrss;
  }
  return r;
}

// A dataset whose train token at position p is p (one document; its final eot token is n_train - 1, so the
// rule holds everywhere) and whose val split has n_val tokens 0, 1, ... with the last one the eot.
// vocab = n_train: stored as uint32 when n_train > 65536.
inline void write_position_dataset(const std::string& path, int64_t n_train, int64_t n_val) {
  DatasetWriter w(path, "positions", int(n_train), int(n_train - 1));
  std::vector<int32_t> ids;
  for (Split s : {Split::Train, Split::Val}) {
    const int64_t n = s == Split::Train ? n_train : n_val;
    ids.resize(size_t(n - 1));
    for (int64_t p = 0; p + 1 < n; ++p) ids[size_t(p)] = int32_t(p);
    w.begin_document(s);
    w.append(s, ids.data(), ids.size());
    w.end_document(s);
  }
  w.finish();
}

// The lines of a text, without their newline characters.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  size_t b = 0;
  while (b < text.size()) {
    size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    v.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return v;
}

}  // namespace gt::test
