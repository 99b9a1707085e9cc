/* A failing disk for one file, by LD_PRELOAD: once GRIDTRAIN_TEST_EIO_AFTER bytes have been written to files whose
 * name ends with GRIDTRAIN_TEST_EIO_FILE, every further write to them fails with EIO, in the process whose
 * PMI_RANK is GRIDTRAIN_TEST_EIO_RANK (every process when unset). Neither a device-mapper error target nor a FUSE
 * file system is available on the test machines (no dm driver in the kernel, no libfuse), so the failure is made
 * at the C library's write calls that MPI-IO (ROMIO's POSIX driver) and HDF5 make; the file system itself stays
 * healthy, which the test relies on to check what was kept. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long written_so_far = 0;

static int failing(int fd, size_t n) {
  const char* suffix = getenv("GRIDTRAIN_TEST_EIO_FILE");
  if (!suffix || !*suffix) return 0;
  const char* rank = getenv("GRIDTRAIN_TEST_EIO_RANK");
  const char* mine = getenv("PMI_RANK");
  if (rank && *rank && (!mine || strcmp(rank, mine) != 0)) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, sizeof path - 1);
  if (len <= 0) return 0;
  path[len] = '\0';
  const size_t s = strlen(suffix);
  if ((size_t)len < s || strcmp(path + len - s, suffix) != 0) return 0;
  const char* after = getenv("GRIDTRAIN_TEST_EIO_AFTER");
  if (written_so_far < (after ? atoll(after) : 0)) {
    written_so_far += (long long)n;
    return 0;
  }
  errno = EIO;
  return 1;
}

typedef ssize_t (*write_fn)(int, const void*, size_t);
typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec*, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec*, int, off_t);

static size_t iov_bytes(const struct iovec* iov, int cnt) {
  size_t n = 0;
  for (int i = 0; i < cnt; ++i) n += iov[i].iov_len;
  return n;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static write_fn real;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  return failing(fd, n) ? -1 : real(fd, buf, n);
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  static pwrite_fn real;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
  return failing(fd, n) ? -1 : real(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) {
  static pwrite_fn real;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
  return failing(fd, n) ? -1 : real(fd, buf, n, off);
}
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  static writev_fn real;
  if (!real) real = (writev_fn)dlsym(RTLD_NEXT, "writev");
  return failing(fd, iov_bytes(iov, cnt)) ? -1 : real(fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  static pwritev_fn real;
  if (!real) real = (pwritev_fn)dlsym(RTLD_NEXT, "pwritev");
  return failing(fd, iov_bytes(iov, cnt)) ? -1 : real(fd, iov, cnt, off);
}
