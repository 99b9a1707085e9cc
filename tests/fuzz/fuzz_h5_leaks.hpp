#pragma once
// Oracle of the HDF5 reader targets: after a reader has returned or thrown, no HDF5 identifier it opened is still
// open. A file handle left open on an error path stays open for the whole run (a resume that skips damaged
// checkpoints would hold each one) and is closed only by HDF5 at MPI_Finalize/exit, where a failed close has
// crashed before (docs/reliability.md, disk full).
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>

namespace gt::fuzz {

inline void check_no_open_hdf5_objects() {
  // transient objects (dataspaces, datatypes, property lists) are not counted by H5Fget_obj_count
  const H5I_type_t kinds[] = {H5I_DATASPACE, H5I_DATATYPE, H5I_GENPROP_LST};
  const char* names[] = {"dataspaces", "datatypes", "property lists"};
  static hsize_t baseline[3] = {0, 0, 0};  // the library's own (predefined types, default lists): first call
  static bool first = true;
  for (int i = 0; i < 3; ++i) {
    hsize_t n = 0;
    H5Inmembers(kinds[i], &n);
    if (first) baseline[i] = n;
    else if (n > baseline[i]) {
      std::fprintf(stderr, "leak: %llu %s more open than after the first input\n",
                   (unsigned long long)(n - baseline[i]), names[i]);
      std::abort();
    }
  }
  first = false;
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open > 0) {
    std::fprintf(stderr, "leak: %zd HDF5 identifiers (files %zd, datasets %zd, attributes %zd) still open\n", open,
                 H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE), H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_DATASET),
                 H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ATTR));
    std::abort();
  }
}

}  // namespace gt::fuzz
