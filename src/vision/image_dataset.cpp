// Writer and reader of the HDF5 image dataset (format in image_dataset.hpp), whole splits at a time: Fashion-MNIST
// is 55 MB and the ImageNet-shaped throughput source is synthetic, so no streaming is needed yet.
#include "src/vision/image_dataset.hpp"

#include <unistd.h>

#include <filesystem>

#include "src/core/error.hpp"
#include "src/data/hash.hpp"
#include "src/io/h5_util.hpp"

namespace gt::vision {
namespace {

std::vector<uint64_t> chunk_sums(const ImageSplit& s) {
  const size_t per = size_t(s.height) * s.width * s.channels;
  std::vector<uint64_t> sums;
  for (int64_t first = 0; first < s.count; first += kImageChunk) {
    const int64_t n = std::min<int64_t>(kImageChunk, s.count - first);
    sums.push_back(fnv1a64(s.pixels.data() + first * per, size_t(n) * per));
  }
  return sums;
}

void write_array(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& dims, const void* data,
                 const std::string& file, bool chunked) {
  io::H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr));
  io::H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (chunked && dims[0] > 0) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::min<hsize_t>(dims[0], kImageChunk);
    H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data());
  }
  io::H5Handle d(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!d.valid() || H5Dwrite(d.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    throw Error(file + ": cannot write " + name + " (disk full?)");
}

void write_split(hid_t file, const char* name, const ImageSplit& s, const std::string& path) {
  io::H5Handle g(H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!g.valid()) throw Error(path + ": cannot create group " + name);
  const hsize_t n = hsize_t(s.count);
  write_array(g.get(), "images", H5T_NATIVE_UINT8, {n, hsize_t(s.height), hsize_t(s.width), hsize_t(s.channels)},
              s.pixels.data(), path, true);
  write_array(g.get(), "labels", H5T_NATIVE_INT32, {n}, s.labels.data(), path, false);
  const auto sums = chunk_sums(s);
  write_array(g.get(), "image_checksums", H5T_NATIVE_UINT64, {hsize_t(sums.size())}, sums.data(), path, false);
}

void write_file(const std::string& path, const ImageDataset& ds) {
  io::H5Quiet quiet;
  io::H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!f.valid()) throw Error(path + ": cannot create the image dataset");
  write_split(f.get(), "train", ds.train, path);
  write_split(f.get(), "test", ds.test, path);
  const hid_t root = f.get();
  io::write_attr_string(root, "gridtrain_kind", "image_dataset");
  io::write_attr_int(root, "format_version", kImageDatasetVersion);
  io::write_attr_string(root, "name", ds.name);
  io::write_attr_int(root, "height", ds.train.height);
  io::write_attr_int(root, "width", ds.train.width);
  io::write_attr_int(root, "channels", ds.train.channels);
  io::write_attr_int(root, "classes", ds.classes);
  io::write_attr_int(root, "train_images", ds.train.count);
  io::write_attr_int(root, "test_images", ds.test.count);
  if (H5Fclose(f.release()) < 0) throw Error(path + ": cannot close the image dataset (disk full?)");
}

}  // namespace

void write_image_dataset(const std::string& path, const ImageDataset& ds) {
  for (const ImageSplit* s : {&ds.train, &ds.test})
    if (s->height != ds.train.height || s->width != ds.train.width || s->channels != ds.train.channels ||
        s->pixels.size() != size_t(s->count) * s->height * s->width * s->channels || s->labels.size() != size_t(s->count))
      throw Error(path + ": the splits' images do not have one shape, or their sizes disagree");
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    write_file(tmp, ds);
    read_image_dataset(tmp);  // what we rename must read back
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw Error(path + ": cannot rename the finished " + tmp + " (" + ec.message() + ")");
}

}  // namespace gt::vision
