#include "src/io/h5_util.hpp"

#include <algorithm>
#include <sstream>

#include "src/core/error.hpp"

namespace gt::io {

H5Handle& H5Handle::operator=(H5Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

void H5Handle::reset() {
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
  id_ = -1;
}

hid_t h5check(hid_t id, const std::string& what) {
  if (id < 0) throw Error(what);
  return id;
}

H5Quiet::H5Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
H5Quiet::~H5Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

namespace {

void write_attr_raw(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* v) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  H5Handle space(h5check(H5Screate(H5S_SCALAR), "cannot create dataspace"));
  H5Handle attr(h5check(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                        "cannot create attribute '" + name + "'"));
  h5check(H5Awrite(attr.get(), mem_type, v), "cannot write attribute '" + name + "'");
}

H5Handle open_attr(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) throw Error("missing attribute '" + name + "'");
  return H5Handle(h5check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "cannot open attribute '" + name + "'"));
}

// Value of a scalar (or one-element) attribute converted by HDF5 to mem_type; cls is the required class.
void read_attr_raw(hid_t obj, const std::string& name, H5T_class_t cls, hid_t mem_type, void* out) {
  H5Handle attr = open_attr(obj, name);
  H5Handle type(h5check(H5Aget_type(attr.get()), "cannot read type of attribute '" + name + "'"));
  H5Handle space(h5check(H5Aget_space(attr.get()), "cannot read attribute '" + name + "'"));
  if (H5Tget_class(type.get()) != cls || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error("attribute '" + name + "' has the wrong type");
  h5check(H5Aread(attr.get(), mem_type, out), "cannot read attribute '" + name + "'");
}

std::string read_str_attr(hid_t attr, const std::string& name) {
  H5Handle type(h5check(H5Aget_type(attr), "cannot read type of attribute '" + name + "'"));
  if (H5Tget_class(type.get()) != H5T_STRING) throw Error("attribute '" + name + "' is not a string");
  H5Handle space(h5check(H5Aget_space(attr), "cannot read attribute '" + name + "'"));
  if (H5Sget_simple_extent_npoints(space.get()) != 1) throw Error("attribute '" + name + "' is not a scalar");
  if (H5Tis_variable_str(type.get()) > 0) {  // written by other tools (h5py), so accept both layouts
    H5Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));  // HDF5 converts no strings between ASCII and UTF-8
    char* s = nullptr;
    h5check(H5Aread(attr, mem.get(), &s), "cannot read attribute '" + name + "'");
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  const size_t n = H5Tget_size(type.get());
  std::string buf(n, '\0');
  h5check(H5Aread(attr, type.get(), buf.data()), "cannot read attribute '" + name + "'");
  buf.resize(std::find(buf.begin(), buf.end(), '\0') - buf.begin());
  return buf;
}

}  // namespace

void write_attr_i64(hid_t obj, const std::string& name, int64_t v) {
  write_attr_raw(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}
void write_attr_u64(hid_t obj, const std::string& name, uint64_t v) {
  write_attr_raw(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}
void write_attr_f64(hid_t obj, const std::string& name, double v) {
  write_attr_raw(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}
void write_attr_str(hid_t obj, const std::string& name, const std::string& v) {
  // Fixed-length, NUL-terminated: h5dump shows it as text and every reader handles it.
  H5Handle type(h5check(H5Tcopy(H5T_C_S1), "cannot create string type"));
  H5Tset_size(type.get(), v.size() + 1);
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  write_attr_raw(obj, name, type.get(), type.get(), v.c_str());
}

bool has_attr(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

int64_t read_attr_i64(hid_t obj, const std::string& name) {
  int64_t v = 0;
  read_attr_raw(obj, name, H5T_INTEGER, H5T_NATIVE_INT64, &v);
  return v;
}
uint64_t read_attr_u64(hid_t obj, const std::string& name) {
  uint64_t v = 0;
  read_attr_raw(obj, name, H5T_INTEGER, H5T_NATIVE_UINT64, &v);
  return v;
}
std::string read_attr_str(hid_t obj, const std::string& name) {
  H5Handle attr = open_attr(obj, name);
  return read_str_attr(attr.get(), name);
}

CheckpointMeta read_all_attrs(hid_t obj) {
  CheckpointMeta meta;
  H5O_info_t info;
  h5check(H5Oget_info2(obj, &info, H5O_INFO_NUM_ATTRS), "cannot read attributes");
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    H5Handle attr(h5check(H5Aopen_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT),
                          "cannot open attribute"));
    const ssize_t len = H5Aget_name(attr.get(), 0, nullptr);
    std::string name(len > 0 ? len : 0, '\0');
    H5Aget_name(attr.get(), name.size() + 1, name.data());
    H5Handle type(h5check(H5Aget_type(attr.get()), "cannot read type of attribute '" + name + "'"));
    switch (H5Tget_class(type.get())) {
      case H5T_INTEGER: meta.ints[name] = read_attr_i64(obj, name); break;
      case H5T_FLOAT: {
        double v = 0;
        read_attr_raw(obj, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, &v);
        meta.reals[name] = v;
        break;
      }
      case H5T_STRING: meta.strings[name] = read_str_attr(attr.get(), name); break;
      default: break;  // not ours: ignore
    }
  }
  return meta;
}

void write_meta_attrs(hid_t obj, const CheckpointMeta& meta) {
  for (const auto& [k, v] : meta.ints) write_attr_i64(obj, k, v);
  for (const auto& [k, v] : meta.reals) write_attr_f64(obj, k, v);
  for (const auto& [k, v] : meta.strings) write_attr_str(obj, k, v);
}

namespace {
herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> list_datasets(hid_t file) {
  std::vector<std::string> names;
  h5check(H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names, H5O_INFO_BASIC),
          "cannot list datasets");
  std::sort(names.begin(), names.end());
  return names;
}

// H5Lexists fails (rather than returning false) when a group on the way is missing: test each prefix.
bool has_link(hid_t loc, const std::string& name) {
  size_t pos = 0;
  while (true) {
    pos = name.find('/', pos + 1);
    const std::string part = name.substr(0, pos);
    if (H5Lexists(loc, part.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

bool dataset_exists(hid_t file, const std::string& path) {
  if (!has_link(file, path)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name2(file, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_DATASET;
}

std::vector<int64_t> dataset_shape(hid_t dset) {
  H5Handle space(h5check(H5Dget_space(dset), "cannot read dataspace"));
  const int nd = H5Sget_simple_extent_ndims(space.get());
  if (nd < 0) throw Error("cannot read dataspace");
  std::vector<hsize_t> dims(nd);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

bool dataset_is_float32(hid_t dset) {
  H5Handle type(h5check(H5Dget_type(dset), "cannot read datatype"));
  return H5Tget_class(type.get()) == H5T_FLOAT && H5Tequal(type.get(), H5T_IEEE_F32LE) > 0;
}

std::string dataset_type_name(hid_t dset) {
  H5Handle type(h5check(H5Dget_type(dset), "cannot read datatype"));
  const size_t bits = 8 * H5Tget_size(type.get());
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT:
      if (bits == 32 && H5Tget_order(type.get()) != H5T_ORDER_LE) return "float32 (big-endian)";
      return "float" + std::to_string(bits);
    case H5T_INTEGER:
      return (H5Tget_sign(type.get()) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
    case H5T_STRING: return "string";
    default: return "a non-numeric type";
  }
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << ')';
  return os.str();
}

void select_box(hid_t space, const std::vector<int64_t>& start, const std::vector<int64_t>& count, bool select) {
  bool empty = !select;
  for (int64_t c : count) empty = empty || c == 0;
  if (empty) {
    H5Sselect_none(space);
    return;
  }
  std::vector<hsize_t> s(start.begin(), start.end()), c(count.begin(), count.end());
  h5check(H5Sselect_hyperslab(space, H5S_SELECT_SET, s.data(), nullptr, c.data(), nullptr),
          "cannot select hyperslab");
}

// ---- attribute lists and file-named errors (the dataset reader and writer) ----
// Strings: the checkpoint code writes scalar strings fixed-length and NUL-terminated; the dataset code writes
// variable-length UTF-8 (string lists: vocabularies, merges). Both readers accept both layouts, so files of
// either convention, and files written by h5py, load.

namespace {

H5Handle open_attr(hid_t loc, const std::string& name, const std::string& file) {
  if (!has_attr(loc, name)) throw Error(file + ": missing attribute " + name);
  H5Handle a(H5Aopen(loc, name.c_str(), H5P_DEFAULT));
  if (!a.valid()) throw Error(file + ": cannot open attribute " + name);
  return a;
}

// The number of elements of attribute `name`, refused when a value of that many elem_bytes-sized elements would be
// larger than any attribute we write (kMaxAttrBytes): then the dataspace is damaged.
size_t attr_count(hid_t attr, size_t elem_bytes, const std::string& name, const std::string& file) {
  H5Handle space(H5Aget_space(attr));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) throw Error(file + ": cannot read the dataspace of attribute " + name);
  if (elem_bytes > 0 && hsize_t(n) > kMaxAttrBytes / elem_bytes)
    throw Error(file + ": attribute " + name + " claims " + std::to_string(n) + " values of " +
                std::to_string(elem_bytes) + " bytes, more than " + std::to_string(kMaxAttrBytes >> 20) +
                " MiB (damaged file?)");
  return size_t(n);
}

template <class T>
std::vector<T> read_numeric(hid_t loc, const std::string& name, const std::string& file, hid_t mem_type,
                            const char* what) {
  H5Handle a = open_attr(loc, name, file);
  H5Handle type(H5Aget_type(a.get()));
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw Error(file + ": attribute " + name + " is not " + what);
  std::vector<T> v(attr_count(a.get(), sizeof(T), name, file));
  if (!v.empty() && H5Aread(a.get(), mem_type, v.data()) < 0) throw Error(file + ": cannot read attribute " + name);
  return v;
}

H5Handle string_type() {
  H5Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

void write_attr(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, const hsize_t* dims, int rank,
                const void* data) {
  if (has_attr(loc, name)) H5Adelete(loc, name.c_str());
  // an empty list gets a null dataspace: HDF5 cannot create an attribute with a zero-sized simple one
  const bool empty = rank == 1 && dims[0] == 0;
  H5Handle space(rank == 0 ? H5Screate(H5S_SCALAR) : empty ? H5Screate(H5S_NULL) : H5Screate_simple(rank, dims, nullptr));
  H5Handle a(H5Acreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.valid() || (!empty && H5Awrite(a.get(), mem_type, data) < 0)) throw Error("cannot write attribute " + name);
}

}  // namespace

std::vector<std::string> read_attr_strings(hid_t loc, const std::string& name, const std::string& file) {
  H5Handle a = open_attr(loc, name, file);
  H5Handle ftype(H5Aget_type(a.get()));
  if (H5Tget_class(ftype.get()) != H5T_STRING) throw Error(file + ": attribute " + name + " is not a string");
  const bool vlen = H5Tis_variable_str(ftype.get()) > 0;
  const size_t n = attr_count(a.get(), vlen ? sizeof(char*) : H5Tget_size(ftype.get()), name, file);
  std::vector<std::string> out;
  if (vlen) {
    std::vector<char*> ptrs(n, nullptr);
    H5Handle mtype = string_type();
    if (n && H5Aread(a.get(), mtype.get(), ptrs.data()) < 0) throw Error(file + ": cannot read attribute " + name);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Handle space(H5Aget_space(a.get()));
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
  H5Handle t = string_type();
  const char* p = value.c_str();
  write_attr(loc, name, t.get(), t.get(), nullptr, 0, &p);
}

void write_attr_int(hid_t loc, const std::string& name, int64_t value) {
  write_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, nullptr, 0, &value);
}

void write_attr_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  H5Handle t = string_type();
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

}  // namespace gt::io
