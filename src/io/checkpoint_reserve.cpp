#include "src/io/checkpoint_reserve.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/core/error.hpp"
#include "src/io/checkpoint_space.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

namespace {

// The in-memory driver's buffer, kept when the driver frees it at close (after the last flush into it). Its
// length is what the driver allocated, at least the file's end: the bytes past it are zeros, which HDF5 ignores
// in a file longer than its end of allocation.
struct ImageCapture {
  std::string bytes;
  size_t size = 0;
};
void* image_malloc(size_t n, H5FD_file_image_op_t, void* u) {
  static_cast<ImageCapture*>(u)->size = n;
  return std::malloc(n);
}
void* image_memcpy(void* dst, const void* src, size_t n, H5FD_file_image_op_t, void*) { return std::memcpy(dst, src, n); }
void* image_realloc(void* p, size_t n, H5FD_file_image_op_t, void* u) {
  static_cast<ImageCapture*>(u)->size = n;
  return std::realloc(p, n);
}
herr_t image_free(void* p, H5FD_file_image_op_t op, void* u) {
  auto* c = static_cast<ImageCapture*>(u);
  if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && p) c->bytes.assign(static_cast<const char*>(p), c->size);
  std::free(p);
  return 0;
}
void* udata_copy(void* u) { return u; }  // the capture outlives every copy of the property list
herr_t udata_free(void*) { return 0; }

// The bytes of an empty HDF5 file in the format the writers use (1.8 format: make_mpio_fapl's bounds), built
// with the in-memory driver: nothing of it touches the disk, so no close can fail on a full one. (Taken at
// close: H5Fget_file_image of the open file clears the superblock's write-access flag without updating its
// checksum in 1.10.8, and the image does not open.)
std::string empty_hdf5_image() {
  H5Quiet quiet;
  ImageCapture capture;
  {
    H5Handle fapl(h5check(H5Pcreate(H5P_FILE_ACCESS), "cannot create file access list"));
    h5check(H5Pset_fapl_core(fapl.get(), 4096, /*backing_store=*/0), "cannot set the in-memory driver");
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy, image_realloc, image_free,
                                             udata_copy,   udata_free,   &capture};
    h5check(H5Pset_file_image_callbacks(fapl.get(), &callbacks), "cannot set file image callbacks");
    H5Handle file(h5check(H5Fcreate("gridtrain-empty-checkpoint", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                          "cannot create an empty HDF5 file in memory"));
    h5check(H5Fclose(file.release()), "cannot close the empty HDF5 file in memory");
  }
  if (capture.bytes.size() < 8 || capture.bytes.compare(0, 4, "\x89HDF") != 0)
    throw Error("cannot make an empty HDF5 file in memory");
  return capture.bytes;
}

std::string no_room(const std::string& dir, int64_t free_b, int64_t bytes) {
  return dir + ": no room for the checkpoint (" + (free_b >= 0 ? mib_text(double(free_b)) : std::string("?")) +
         " free, it needs " + mib_text(double(bytes)) + "); not saved, the previous checkpoints are kept";
}

void write_all(int fd, const std::string& bytes, const std::string& tmp) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::pwrite(fd, bytes.data() + done, bytes.size() - done, off_t(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(tmp + ": cannot write: " + std::strerror(w < 0 ? errno : EIO));
    done += size_t(w);
  }
}

}  // namespace

bool reserve_checkpoint_file(const std::string& dir, const std::string& tmp, int64_t bytes) {
  const std::string image = empty_hdf5_image();
  bytes = std::max<int64_t>(bytes, int64_t(image.size()));
  // Before the file exists: a failed posix_fallocate may keep what it allocated until the file is removed.
  const int64_t free_before = free_bytes(dir);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ENOSPC) throw Error(no_room(dir, free_before, bytes));
    throw Error(tmp + ": cannot create: " + std::strerror(errno));
  }
  bool reserved = false;
  int fd_open = fd;  // -1 once closed: never closed twice (another thread may have reused the number)
  try {
    const int rc = ::posix_fallocate(fd, 0, off_t(bytes));
    reserved = rc == 0;
    if (rc == ENOSPC || rc == EDQUOT) throw Error(no_room(dir, free_before, bytes));
    if (rc == EOPNOTSUPP || rc == EINVAL) {  // no reservation here: the free space is the best guess left
      if (free_before >= 0 && free_before < bytes) throw Error(no_room(dir, free_before, bytes));
    } else if (rc != 0) {
      throw Error(tmp + ": cannot reserve " + mib_text(double(bytes)) + ": " + std::strerror(rc));
    }
    write_all(fd, image, tmp);  // inside the reserved blocks
    fd_open = -1;
    if (::close(fd) != 0) throw Error(tmp + ": cannot write: " + std::strerror(errno));
  } catch (...) {
    if (fd_open >= 0) ::close(fd_open);
    ::unlink(tmp.c_str());
    throw;
  }
  return reserved;
}

}  // namespace gt::io
