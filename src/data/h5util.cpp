#include "src/data/h5util.hpp"

#include "src/core/error.hpp"

namespace gt::h5 {

void Handle::reset() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
  id_ = H5I_INVALID_HID;
}

Quiet::Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
Quiet::~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

bool has_link(hid_t loc, const std::string& name) {
  // check each path component so that "a/b" with a missing "a" is false rather than an error
  size_t pos = 0;
  while (true) {
    pos = name.find('/', pos + 1);
    const std::string part = name.substr(0, pos);
    if (H5Lexists(loc, part.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

bool has_attr(hid_t loc, const std::string& name) { return H5Aexists(loc, name.c_str()) > 0; }

namespace {

Handle open_attr(hid_t loc, const std::string& name, const std::string& file) {
  if (!has_attr(loc, name)) throw Error(file + ": missing attribute " + name);
  Handle a(H5Aopen(loc, name.c_str(), H5P_DEFAULT));
  if (!a.valid()) throw Error(file + ": cannot open attribute " + name);
  return a;
}

hssize_t attr_count(hid_t attr) {
  Handle space(H5Aget_space(attr));
  return H5Sget_simple_extent_npoints(space.get());
}

template <class T>
std::vector<T> read_numeric(hid_t loc, const std::string& name, const std::string& file, hid_t mem_type,
                            const char* what) {
  Handle a = open_attr(loc, name, file);
  Handle type(H5Aget_type(a.get()));
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw Error(file + ": attribute " + name + " is not " + what);
  std::vector<T> v(size_t(attr_count(a.get())));
  if (!v.empty() && H5Aread(a.get(), mem_type, v.data()) < 0) throw Error(file + ": cannot read attribute " + name);
  return v;
}

Handle string_type() {
  Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

void write_attr(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, const hsize_t* dims, int rank,
                const void* data) {
  if (has_attr(loc, name)) H5Adelete(loc, name.c_str());
  // an empty list gets a null dataspace: HDF5 cannot create an attribute with a zero-sized simple one
  const bool empty = rank == 1 && dims[0] == 0;
  Handle space(rank == 0 ? H5Screate(H5S_SCALAR) : empty ? H5Screate(H5S_NULL) : H5Screate_simple(rank, dims, nullptr));
  Handle a(H5Acreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.valid() || (!empty && H5Awrite(a.get(), mem_type, data) < 0)) throw Error("cannot write attribute " + name);
}

}  // namespace

std::vector<std::string> read_attr_strings(hid_t loc, const std::string& name, const std::string& file) {
  Handle a = open_attr(loc, name, file);
  Handle ftype(H5Aget_type(a.get()));
  if (H5Tget_class(ftype.get()) != H5T_STRING) throw Error(file + ": attribute " + name + " is not a string");
  const size_t n = size_t(attr_count(a.get()));
  std::vector<std::string> out;
  if (H5Tis_variable_str(ftype.get()) > 0) {
    std::vector<char*> ptrs(n, nullptr);
    Handle mtype = string_type();
    if (n && H5Aread(a.get(), mtype.get(), ptrs.data()) < 0) throw Error(file + ": cannot read attribute " + name);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    Handle space(H5Aget_space(a.get()));
    if (n) H5Dvlen_reclaim(mtype.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    const size_t len = H5Tget_size(ftype.get());
    std::vector<char> buf(n * len);
    if (n && H5Aread(a.get(), ftype.get(), buf.data()) < 0) throw Error(file + ": cannot read attribute " + name);
    for (size_t i = 0; i < n; ++i) {
      std::string s(buf.data() + i * len, len);
      s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
      out.push_back(s);
    }
  }
  return out;
}

std::string read_attr_string(hid_t loc, const std::string& name, const std::string& file) {
  std::vector<std::string> v = read_attr_strings(loc, name, file);
  if (v.size() != 1) throw Error(file + ": attribute " + name + " is not a single string");
  return v[0];
}

int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& file) {
  std::vector<int64_t> v = read_numeric<int64_t>(loc, name, file, H5T_NATIVE_INT64, "an integer");
  if (v.size() != 1) throw Error(file + ": attribute " + name + " is not a single integer");
  return v[0];
}

std::vector<uint64_t> read_attr_u64s(hid_t loc, const std::string& name, const std::string& file) {
  return read_numeric<uint64_t>(loc, name, file, H5T_NATIVE_UINT64, "an integer array");
}
std::vector<int64_t> read_attr_i64s(hid_t loc, const std::string& name, const std::string& file) {
  return read_numeric<int64_t>(loc, name, file, H5T_NATIVE_INT64, "an integer array");
}

void write_attr_string(hid_t loc, const std::string& name, const std::string& value) {
  Handle t = string_type();
  const char* p = value.c_str();
  write_attr(loc, name, t.get(), t.get(), nullptr, 0, &p);
}

void write_attr_int(hid_t loc, const std::string& name, int64_t value) {
  write_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, nullptr, 0, &value);
}

void write_attr_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  Handle t = string_type();
  std::vector<const char*> ptrs;
  for (const auto& s : values) ptrs.push_back(s.c_str());
  const hsize_t dims[1] = {hsize_t(values.size())};
  write_attr(loc, name, t.get(), t.get(), dims, 1, ptrs.data());
}

void write_attr_u64s(hid_t loc, const std::string& name, const std::vector<uint64_t>& values) {
  const hsize_t dims[1] = {hsize_t(values.size())};
  write_attr(loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, dims, 1, values.data());
}
void write_attr_i64s(hid_t loc, const std::string& name, const std::vector<int64_t>& values) {
  const hsize_t dims[1] = {hsize_t(values.size())};
  write_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, dims, 1, values.data());
}

}  // namespace gt::h5
