#pragma once
// What HDF5 itself said about the call that just failed. Our own messages name the file and the problem;
// appending HDF5's innermost error ("incorrect metadata checksum after all read attempts", "truncated file:
// eof = ...", "file signature not found") tells a user *why* a file is unreadable, which "not a gridtrain
// file" alone did not. HDF5 clears its error stack at the start of every API call, so call this right after
// the failed call, before any other HDF5 function.
#include <string>

namespace gt::io {

// " (HDF5: <innermost description>)" of the current thread's error stack, or "" when it is empty.
std::string h5_error_suffix();

}  // namespace gt::io
