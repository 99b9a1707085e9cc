// Reader of the HDF5 image dataset: every check that can name the problem does, before any image is used.
#include "src/core/error.hpp"
#include "src/data/hash.hpp"
#include "src/io/h5_util.hpp"
#include "src/vision/image_dataset.hpp"

namespace gt::vision {
namespace {

void read_array(hid_t group, const char* name, hid_t type, void* data, const std::vector<int64_t>& want,
                const std::string& file, const char* split) {
  const std::string where = file + ": " + split + "/" + name;
  if (!io::has_link(group, name)) throw Error(where + " is missing");
  io::H5Handle d(H5Dopen2(group, name, H5P_DEFAULT));
  if (!d.valid()) throw Error(where + " cannot be opened");
  const auto shape = io::dataset_shape(d.get());
  if (shape != want) throw Error(where + " has shape " + io::shape_str(shape) + ", expected " + io::shape_str(want));
  if (H5Dread(d.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) throw Error(where + " cannot be read (damaged?)");
}

ImageSplit read_split(hid_t file, const char* name, int count, int h, int w, int c, int classes,
                      const std::string& path) {
  if (!io::has_link(file, name)) throw Error(path + ": the split " + name + " is missing");
  // The attributes say how much to allocate, before any dataset is compared with them: damaged ones could ask for
  // anything (2^30 on each of four sides). The images and labels are stored unfiltered, so they fit in the file.
  hsize_t file_bytes = 0;
  H5Fget_filesize(file, &file_bytes);
  // in double: exact products would need 120 bits, and a comparison with the file's size needs no exactness
  const double bytes = double(count) * (double(h) * double(w) * double(c) + 4.0);
  if (h < 1 || w < 1 || c < 1 || bytes > double(file_bytes))
    throw Error(path + ": the attributes claim " + std::to_string(count) + " " + name + " images of " +
                std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + ", more than the file's " +
                std::to_string(file_bytes) + " bytes hold (damaged?)");
  io::H5Handle g(H5Gopen2(file, name, H5P_DEFAULT));
  ImageSplit s{count, h, w, c, {}, {}};
  s.pixels.resize(size_t(count) * h * w * c);
  s.labels.resize(count);
  read_array(g.get(), "images", H5T_NATIVE_UINT8, s.pixels.data(), {count, h, w, c}, path, name);
  read_array(g.get(), "labels", H5T_NATIVE_INT32, s.labels.data(), {count}, path, name);
  const int64_t chunks = (count + kImageChunk - 1) / kImageChunk;
  std::vector<uint64_t> sums(chunks);
  read_array(g.get(), "image_checksums", H5T_NATIVE_UINT64, sums.data(), {chunks}, path, name);
  const size_t per = size_t(h) * w * c;
  for (int64_t k = 0; k < chunks; ++k) {
    const int64_t first = k * kImageChunk, n = std::min<int64_t>(kImageChunk, count - first);
    if (fnv1a64(s.pixels.data() + first * per, size_t(n) * per) != sums[k])
      throw Error(path + ": " + name + "/images chunk " + std::to_string(k) + " (images " + std::to_string(first) +
                  ".." + std::to_string(first + n - 1) + ") does not match its checksum: the file is damaged");
  }
  for (int i = 0; i < count; ++i)
    if (s.labels[i] < 0 || s.labels[i] >= classes)
      throw Error(path + ": " + name + "/labels[" + std::to_string(i) + "] = " + std::to_string(s.labels[i]) +
                  " is outside [0, " + std::to_string(classes) + ")");
  return s;
}

}  // namespace

ImageDataset read_image_dataset(const std::string& path) {
  io::H5Quiet quiet;
  io::H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f.valid()) throw Error(path + ": cannot open the image dataset (missing, or not HDF5)");
  const hid_t root = f.get();
  if (!io::has_attr(root, "gridtrain_kind")) throw Error(path + ": not a gridtrain file (no gridtrain_kind)");
  const std::string kind = io::read_attr_string(root, "gridtrain_kind", path);
  if (kind == "dataset") throw Error(path + ": is a token dataset; a resnet model needs an image dataset");
  if (kind != "image_dataset") throw Error(path + ": gridtrain_kind is '" + kind + "', not 'image_dataset'");
  const int64_t version = io::read_attr_int(root, "format_version", path);
  if (version != kImageDatasetVersion)
    throw Error(path + ": image dataset format " + std::to_string(version) + ", this build reads " +
                std::to_string(kImageDatasetVersion));
  auto attr = [&](const char* n) {
    const int64_t v = io::read_attr_int(root, n, path);
    if (v < 0 || v > (int64_t(1) << 30)) throw Error(path + ": attribute " + std::string(n) + " is out of range");
    return int(v);
  };
  ImageDataset ds;
  ds.name = io::read_attr_string(root, "name", path);
  ds.classes = attr("classes");
  const int h = attr("height"), w = attr("width"), c = attr("channels");
  ds.train = read_split(root, "train", attr("train_images"), h, w, c, ds.classes, path);
  ds.test = read_split(root, "test", attr("test_images"), h, w, c, ds.classes, path);
  return ds;
}

void check_images_fit(const ImageDataset& ds, const std::string& path, int height, int width, int channels,
                      int classes) {
  auto shape = [](int h, int w, int c) {
    return std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c);
  };
  if (ds.train.height != height || ds.train.width != width || ds.train.channels != channels)
    throw Error(path + " holds " + shape(ds.train.height, ds.train.width, ds.train.channels) +
                " images; the model takes " + shape(height, width, channels));
  if (ds.classes != classes)
    throw Error(path + " has " + std::to_string(ds.classes) + " classes; the model has " + std::to_string(classes));
}

}  // namespace gt::vision
