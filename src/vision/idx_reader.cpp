// idx files through zlib's gz reader, which passes uncompressed files through unchanged.
#include "src/vision/idx_reader.hpp"

#include <zlib.h>

#include <memory>

#include "src/core/error.hpp"

namespace gt::vision {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzCloser>;

Gz open_gz(const std::string& path) {
  Gz f(gzopen(path.c_str(), "rb"));
  if (!f) throw Error("cannot open the idx file " + path);
  return f;
}

void read_exact(gzFile f, const std::string& path, void* dst, size_t n, const char* what) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = unsigned(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, static_cast<char*>(dst) + done, chunk);
    if (got <= 0) throw Error("the idx file " + path + " is truncated or damaged (reading its " + what + ")");
    done += size_t(got);
  }
}

std::uint32_t read_be32(gzFile f, const std::string& path, const char* what) {
  unsigned char b[4];
  read_exact(f, path, b, 4, what);
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
}

void expect_end(gzFile f, const std::string& path) {
  char extra;
  if (gzread(f, &extra, 1) != 0) throw Error("the idx file " + path + " has bytes after its data");
}

void expect_magic(gzFile f, const std::string& path, std::uint32_t want, const char* kind) {
  const std::uint32_t magic = read_be32(f, path, "header");
  if (magic != want) throw Error("the idx file " + path + " is not an idx " + kind + " file (wrong magic number)");
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  Gz f = open_gz(path);
  expect_magic(f.get(), path, 0x803, "image");
  IdxImages img;
  const std::uint32_t count = read_be32(f.get(), path, "header"), rows = read_be32(f.get(), path, "header"),
                      cols = read_be32(f.get(), path, "header");
  if (count == 0 || rows == 0 || cols == 0 || count > (1u << 26) || rows > 4096 || cols > 4096)
    throw Error("the idx file " + path + " has an implausible shape");
  img.count = int(count);
  img.rows = int(rows);
  img.cols = int(cols);
  img.pixels.resize(size_t(count) * rows * cols);
  read_exact(f.get(), path, img.pixels.data(), img.pixels.size(), "pixels");
  expect_end(f.get(), path);
  return img;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path) {
  Gz f = open_gz(path);
  expect_magic(f.get(), path, 0x801, "label");
  const std::uint32_t count = read_be32(f.get(), path, "header");
  if (count == 0 || count > (1u << 26)) throw Error("the idx file " + path + " has an implausible count");
  std::vector<std::uint8_t> labels(count);
  read_exact(f.get(), path, labels.data(), labels.size(), "labels");
  expect_end(f.get(), path);
  return labels;
}

}  // namespace gt::vision
