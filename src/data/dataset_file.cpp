#include "src/data/dataset_file.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "src/core/error.hpp"
#include "src/data/dataset_format.hpp"
#include "src/data/hash.hpp"
#include "src/io/h5_probe.hpp"

namespace gt {

namespace {

// Opens name as a 1-D dataset of an integer type; returns its length and (signedness, bytes).
io::H5Handle open_1d(hid_t file, const std::string& name, const std::string& path, int64_t* length, bool* is_signed,
                   int* bytes) {
  if (!io::has_link(file, name)) throw Error(path + ": missing dataset /" + name);
  io::H5Handle d(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!d.valid()) throw Error(path + ": cannot open dataset /" + name);
  io::H5Handle space(H5Dget_space(d.get()));
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw Error(path + ": dataset /" + name + " is not 1-D");
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  *length = int64_t(dims[0]);
  io::H5Handle type(H5Dget_type(d.get()));
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(path + ": dataset /" + name + " has a non-integer type");
  *is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
  *bytes = int(H5Tget_size(type.get()));
  return d;
}

// /<split>/token_checksums: one FNV-1a 64 per kTokenChunk tokens, `chunks` of them.
std::vector<uint64_t> read_checksums(hid_t root, const std::string& split, int64_t chunks, const std::string& path) {
  int64_t len = 0;
  bool sgn = false;
  int bytes = 0;
  io::H5Handle d = open_1d(root, split + "/token_checksums", path, &len, &sgn, &bytes);
  if (sgn || bytes != 8 || len != chunks)
    throw Error(path + ": /" + split + "/token_checksums must hold " + std::to_string(chunks) +
                " uint64 values (one per " + std::to_string(kTokenChunk) + " tokens), it holds " + std::to_string(len));
  // a damaged extent can claim any length; the checksums we write are stored unfiltered, so they cannot be
  // larger than the file that holds them: refuse before allocating
  hsize_t file_bytes = 0;
  if (H5Fget_filesize(root, &file_bytes) < 0 || hsize_t(chunks) > file_bytes / 8)
    throw Error(path + ": /" + split + "/token_checksums claims " + std::to_string(chunks) +
                " values, more than the file's " + std::to_string(file_bytes) + " bytes hold (damaged file?)");
  std::vector<uint64_t> sums(static_cast<size_t>(chunks));
  if (chunks > 0 && H5Dread(d.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, sums.data()) < 0)
    throw Error(path + ": cannot read /" + split + "/token_checksums");
  return sums;
}

}  // namespace

DatasetFile::DatasetFile(const std::string& path) {
  io::H5Quiet quiet;
  info_.path = path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": no such dataset file");
  // libhdf5 1.10.8 crashes or hangs on some damaged metadata (src/io/h5_probe.hpp): find out in a child process
  // first, so that it is one line and exit 1 instead of exit 139 or a run that never starts. Each rank that opens
  // the file asks (the ranks are independent here); they read the same bytes and so reach the same verdict.
  if (const std::string problem = io::hdf5_probe_problem(path); !problem.empty()) throw Error(path + ": " + problem);
  if (H5Fis_hdf5(path.c_str()) <= 0) throw Error(path + ": not an HDF5 file (or its header is damaged)");
  file_ = io::H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file_.valid()) throw Error(path + ": cannot open as HDF5 (truncated or corrupt?)");
  const hid_t root = file_.get();
  if (!io::has_attr(root, "gridtrain_kind")) throw Error(path + ": missing attribute gridtrain_kind (not a gridtrain dataset)");
  const std::string kind = io::read_attr_string(root, "gridtrain_kind", path);
  if (kind != "dataset") throw Error(path + ": gridtrain_kind is '" + kind + "', not 'dataset'");
  info_.format_version = io::read_attr_int(root, "format_version", path);
  if (info_.format_version != kDatasetFormatVersion)
    throw Error(path + ": format_version " + std::to_string(info_.format_version) + " is not supported (expected " +
                std::to_string(kDatasetFormatVersion) + ")");
  info_.tokenizer = io::read_attr_string(root, "tokenizer", path);
  info_.vocab_size = io::read_attr_int(root, "vocab_size", path);
  info_.eot_id = io::read_attr_int(root, "eot_id", path);
  if (info_.vocab_size < 2 || info_.vocab_size > (int64_t(1) << 31))
    throw Error(path + ": vocab_size " + std::to_string(info_.vocab_size) + " is out of range");
  if (info_.eot_id < 0 || info_.eot_id >= info_.vocab_size) throw Error(path + ": eot_id is not below vocab_size");
  info_.source_files = io::read_attr_strings(root, "source_files", path);
  info_.source_bytes = io::read_attr_i64s(root, "source_bytes", path);
  info_.source_fnv1a64 = io::read_attr_u64s(root, "source_fnv1a64", path);
  info_.source_split = io::read_attr_i64s(root, "source_split", path);
  const std::vector<uint64_t> corpus = io::read_attr_u64s(root, "corpus_fnv1a64", path);
  info_.corpus_fnv1a64 = corpus.empty() ? 0 : corpus[0];

  for (int s = 0; s < 2; ++s) {
    const std::string split = s == 0 ? "train" : "val";
    int64_t len = 0;
    bool sgn = false;
    int bytes = 0;
    tokens_[s] = open_1d(root, split + "/tokens", path, &len, &sgn, &bytes);
    if (sgn || (bytes != 1 && bytes != 2 && bytes != 4))
      throw Error(path + ": dataset /" + split + "/tokens must be uint8, uint16 or uint32");
    if (bytes < token_bytes_for_vocab(info_.vocab_size))
      throw Error(path + ": dataset /" + split + "/tokens is " + std::to_string(8 * bytes) +
                  "-bit, too narrow for vocab_size " + std::to_string(info_.vocab_size));
    if (s == 1 && bytes != info_.token_bytes) throw Error(path + ": train and val tokens have different types");
    info_.token_bytes = bytes;
    info_.tokens[s] = len;
    const int64_t attr_tokens = io::read_attr_int(root, split + "_tokens", path);
    if (attr_tokens != len)
      throw Error(path + ": /" + split + "/tokens holds " + std::to_string(len) + " tokens but attribute " + split +
                  "_tokens says " + std::to_string(attr_tokens));
    offsets_[s] = open_1d(root, split + "/doc_offsets", path, &len, &sgn, &bytes);
    if (!sgn || bytes != 8) throw Error(path + ": dataset /" + split + "/doc_offsets must be int64");
    info_.documents[s] = len;
    const int64_t attr_docs = io::read_attr_int(root, split + "_documents", path);
    if (attr_docs != len)
      throw Error(path + ": /" + split + "/doc_offsets holds " + std::to_string(len) + " entries but attribute " +
                  split + "_documents says " + std::to_string(attr_docs));
    const int64_t chunks = (info_.tokens[s] + kTokenChunk - 1) / kTokenChunk;
    if (io::has_link(root, split + "/token_checksums")) {
      chunk_sums_[s] = read_checksums(root, split, chunks, path);
      verified_[s].assign(size_t(chunks), false);
    } else if (s == 0) {
      // Once per process: every file opened before checksums existed says so, then loads as before.
      static bool warned = false;
      if (!warned)
        std::fprintf(stderr, "gridtrain: warning: %s has no token checksums (written before they existed): damage to "
                     "its tokens cannot be detected; `gridtrain prepare` writes them\n", path.c_str());
      warned = true;
    }
  }
}

void DatasetFile::verify_chunk(int k, int64_t c) {
  const int64_t first = c * kTokenChunk, n = std::min(kTokenChunk, info_.tokens[k] - first);
  std::vector<int32_t> buf(static_cast<size_t>(n));
  read_raw(k, first, n, buf.data(), false);  // the checksum first: damage is named as such, not as a bad id
  uint64_t h = kFnvOffset;
  for (int32_t t : buf) h = fnv1a64(&t, sizeof t, h);
  if (h != chunk_sums_[k][size_t(c)])
    throw Error(info_.path + ": /" + (k == 0 ? "train" : "val") + "/tokens chunk " + std::to_string(c) + " (tokens " +
                std::to_string(first) + "-" + std::to_string(first + n - 1) +
                ") does not match its checksum: the file is damaged (write it again with gridtrain prepare)");
  verified_[k][size_t(c)] = true;
}

void DatasetFile::read_tokens(Split s, int64_t start, int64_t count, int32_t* out) {
  const int k = s == Split::Train ? 0 : 1;
  if (start < 0 || count < 0 || start + count > info_.tokens[k])
    throw Error(info_.path + ": token range [" + std::to_string(start) + ", " + std::to_string(start + count) +
                ") is outside the " + split_name(s) + " split (" + std::to_string(info_.tokens[k]) + " tokens)");
  if (count == 0) return;
  if (!chunk_sums_[k].empty())
    for (int64_t c = start / kTokenChunk; c <= (start + count - 1) / kTokenChunk; ++c)
      if (!verified_[k][size_t(c)]) verify_chunk(k, c);
  read_raw(k, start, count, out, true);
}

void DatasetFile::read_raw(int k, int64_t start, int64_t count, int32_t* out, bool check_vocab) {
  const Split s = k == 0 ? Split::Train : Split::Val;
  io::H5Quiet quiet;
  const hsize_t st[1] = {hsize_t(start)}, cnt[1] = {hsize_t(count)};
  io::H5Handle fspace(H5Dget_space(tokens_[k].get()));
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, st, nullptr, cnt, nullptr);
  io::H5Handle mspace(H5Screate_simple(1, cnt, nullptr));
  const int w = info_.token_bytes;
  // read in the stored width (no HDF5 conversion), then widen in place from the back
  const hid_t mtype = w == 1 ? H5T_NATIVE_UINT8 : w == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32;
  if (H5Dread(tokens_[k].get(), mtype, mspace.get(), fspace.get(), H5P_DEFAULT, out) < 0)
    throw Error(info_.path + ": reading /" + split_name(s) + "/tokens failed (truncated or corrupt file?)");
  const uint32_t vocab = uint32_t(info_.vocab_size);
  bool bad = false;
  if (w == 1) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(out);
    for (int64_t i = count; i-- > 0;) out[i] = int32_t(p[i]);
  } else if (w == 2) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(out);
    for (int64_t i = count; i-- > 0;) out[i] = int32_t(p[i]);
  }
  if (!check_vocab) return;
  for (int64_t i = 0; i < count; ++i) bad |= uint32_t(out[i]) >= vocab;
  if (bad) throw Error(info_.path + ": token id >= vocab_size in /" + split_name(s) + "/tokens (corrupt file?)");
}

void DatasetFile::read_doc_offsets(Split s, int64_t start, int64_t count, int64_t* out) {
  const int k = s == Split::Train ? 0 : 1;
  if (start < 0 || count < 0 || start + count > info_.documents[k])
    throw Error(info_.path + ": document range outside the " + std::string(split_name(s)) + " split");
  if (count == 0) return;
  io::H5Quiet quiet;
  const hsize_t st[1] = {hsize_t(start)}, cnt[1] = {hsize_t(count)};
  io::H5Handle fspace(H5Dget_space(offsets_[k].get()));
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, st, nullptr, cnt, nullptr);
  io::H5Handle mspace(H5Screate_simple(1, cnt, nullptr));
  if (H5Dread(offsets_[k].get(), H5T_NATIVE_INT64, mspace.get(), fspace.get(), H5P_DEFAULT, out) < 0)
    throw Error(info_.path + ": reading /" + split_name(s) + "/doc_offsets failed (truncated or corrupt file?)");
}

}  // namespace gt
