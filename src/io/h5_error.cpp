#include "src/io/h5_error.hpp"

#include <hdf5.h>

namespace gt::io {

namespace {
// Walked from the innermost record outwards: the first one is the lowest-level cause.
herr_t take_innermost(unsigned n, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (n == 0 && e && e->desc) *s = e->desc;
  return 0;
}
}  // namespace

std::string h5_error_suffix() {
  std::string desc;
  if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &desc) < 0 || desc.empty()) return "";
  return " (HDF5: " + desc + ")";
}

}  // namespace gt::io
