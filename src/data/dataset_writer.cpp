#include "src/data/dataset_writer.hpp"

#include <cstring>

#include "src/core/error.hpp"
#include "src/data/dataset_format.hpp"
#include "src/data/hash.hpp"

namespace gt {

namespace {

constexpr size_t kFlushTokens = size_t(1) << 20;

hid_t file_token_type(int bytes) { return bytes == 1 ? H5T_STD_U8LE : bytes == 2 ? H5T_STD_U16LE : H5T_STD_U32LE; }

io::H5Handle create_extendible(hid_t loc, const char* name, hid_t type, hsize_t chunk, const std::string& file) {
  const hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunks[1] = {chunk};
  io::H5Handle space(H5Screate_simple(1, dims, maxdims));
  io::H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_chunk(dcpl.get(), 1, chunks);
  io::H5Handle d(H5Dcreate2(loc, name, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!d.valid()) throw Error(file + ": cannot create dataset " + name);
  return d;
}

// Appends n values of mem_type to the end of the 1-D dataset d, whose current length is `at`.
void append_1d(hid_t d, int64_t at, const void* data, size_t n, hid_t mem_type, const std::string& file) {
  if (n == 0) return;
  const hsize_t new_size[1] = {hsize_t(at) + n}, start[1] = {hsize_t(at)}, count[1] = {n};
  if (H5Dset_extent(d, new_size) < 0) throw Error(file + ": cannot extend dataset (disk full?)");
  io::H5Handle fspace(H5Dget_space(d));
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  io::H5Handle mspace(H5Screate_simple(1, count, nullptr));
  if (H5Dwrite(d, mem_type, mspace.get(), fspace.get(), H5P_DEFAULT, data) < 0)
    throw Error(file + ": write failed (disk full?)");
}

}  // namespace

DatasetWriter::DatasetWriter(const std::string& path, const std::string& tokenizer, int vocab_size, int eot_id)
    : path_(path), tokenizer_(tokenizer), vocab_(vocab_size), eot_(eot_id),
      token_bytes_(token_bytes_for_vocab(vocab_size)), corpus_fnv_(kFnvOffset) {
  io::H5Quiet quiet;
  // v1.8+ object headers: dense attribute storage, so the source list may exceed 64 KiB
  io::H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  file_ = io::H5Handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!file_.valid()) throw Error(path + ": cannot create the output file (missing directory or no permission?)");
  for (Split s : {Split::Train, Split::Val}) {
    Part& p = part(s);
    p.group = io::H5Handle(H5Gcreate2(file_.get(), split_name(s), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!p.group.valid()) throw Error(path + ": cannot create group " + split_name(s));
    p.tokens = create_extendible(p.group.get(), "tokens", file_token_type(token_bytes_), kTokenChunk, path);
    p.offsets_ds = create_extendible(p.group.get(), "doc_offsets", H5T_STD_I64LE, kOffsetChunk, path);
  }
}

DatasetWriter::~DatasetWriter() = default;  // an unfinished file is left incomplete; the caller deletes it

void DatasetWriter::begin_document(Split split) {
  Part& p = part(split);
  p.offsets.push_back(tokens(split));
  if (p.offsets.size() >= size_t(kOffsetChunk)) flush_offsets(p);
}

void DatasetWriter::append(Split split, const int32_t* ids, size_t n) {
  Part& p = part(split);
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab_) throw Error(path_ + ": token id " + std::to_string(ids[i]) + " out of range");
  p.buf.insert(p.buf.end(), ids, ids + n);
  if (p.buf.size() >= kFlushTokens) flush_tokens(p);
}

void DatasetWriter::end_document(Split split) {
  const int32_t e = eot_;
  append(split, &e, 1);
}

void DatasetWriter::add_source(const std::string& file, int64_t bytes, uint64_t fnv1a64, Split split) {
  src_files_.push_back(file);
  src_bytes_.push_back(bytes);
  src_fnv_.push_back(fnv1a64);
  src_split_.push_back(split == Split::Train ? 0 : 1);
  corpus_fnv_ = fnv1a64 ^ mix64(corpus_fnv_);  // order-dependent combination of the file checksums
}

void DatasetWriter::flush_tokens(Part& p) {
  io::H5Quiet quiet;
  for (int32_t t : p.buf) {  // per-chunk checksums (dataset_format.hpp), verified by DatasetFile as chunks are read
    if (p.in_chunk == 0) p.chunk_hash = kFnvOffset;
    p.chunk_hash = fnv1a64(&t, sizeof t, p.chunk_hash);
    if (++p.in_chunk == kTokenChunk) {
      p.chunk_sums.push_back(p.chunk_hash);
      p.in_chunk = 0;
    }
  }
  // narrow to the stored width here, so that HDF5 does no type conversion
  if (token_bytes_ == 1) {
    std::vector<uint8_t> v(p.buf.begin(), p.buf.end());
    append_1d(p.tokens.get(), p.written, v.data(), v.size(), H5T_NATIVE_UINT8, path_);
  } else if (token_bytes_ == 2) {
    std::vector<uint16_t> v(p.buf.begin(), p.buf.end());
    append_1d(p.tokens.get(), p.written, v.data(), v.size(), H5T_NATIVE_UINT16, path_);
  } else {
    append_1d(p.tokens.get(), p.written, p.buf.data(), p.buf.size(), H5T_NATIVE_INT32, path_);
  }
  p.written += int64_t(p.buf.size());
  p.buf.clear();
}

void DatasetWriter::flush_offsets(Part& p) {
  io::H5Quiet quiet;
  append_1d(p.offsets_ds.get(), p.docs_written, p.offsets.data(), p.offsets.size(), H5T_NATIVE_INT64, path_);
  p.docs_written += int64_t(p.offsets.size());
  p.offsets.clear();
}

void DatasetWriter::write_attributes() {
  const hid_t root = file_.get();
  io::write_attr_string(root, "gridtrain_kind", "dataset");
  io::write_attr_int(root, "format_version", kDatasetFormatVersion);
  io::write_attr_string(root, "tokenizer", tokenizer_);
  io::write_attr_int(root, "vocab_size", vocab_);
  io::write_attr_int(root, "eot_id", eot_);
  for (Split s : {Split::Train, Split::Val}) {
    io::write_attr_int(root, std::string(split_name(s)) + "_tokens", part(s).written);
    io::write_attr_int(root, std::string(split_name(s)) + "_documents", part(s).docs_written);
  }
  for (Split s : {Split::Train, Split::Val}) {
    Part& p = part(s);
    if (p.in_chunk > 0) p.chunk_sums.push_back(p.chunk_hash);  // the last, partial chunk
    p.in_chunk = 0;
    const hsize_t n[1] = {p.chunk_sums.size()};
    io::H5Handle space(H5Screate_simple(1, n, nullptr));
    io::H5Handle d(H5Dcreate2(p.group.get(), "token_checksums", H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT));
    if (!d.valid() || (n[0] > 0 && H5Dwrite(d.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                            p.chunk_sums.data()) < 0))
      throw Error(std::string("cannot write /") + split_name(s) + "/token_checksums (disk full?)");
  }
  io::write_attr_strings(root, "source_files", src_files_);
  io::write_attr_i64s(root, "source_bytes", src_bytes_);
  io::write_attr_u64s(root, "source_fnv1a64", src_fnv_);
  io::write_attr_i64s(root, "source_split", src_split_);
  io::write_attr_u64s(root, "corpus_fnv1a64", {corpus_fnv_});
}

void DatasetWriter::finish() {
  if (finished_) return;
  for (Part& p : parts_) {
    flush_tokens(p);
    flush_offsets(p);
  }
  io::H5Quiet quiet;
  try {
    write_attributes();
  } catch (const Error& e) {
    throw Error(path_ + ": " + e.what());
  }
  for (Part& p : parts_) {
    p.tokens.reset();
    p.offsets_ds.reset();
    p.group.reset();
  }
  if (H5Fflush(file_.get(), H5F_SCOPE_GLOBAL) < 0) throw Error(path_ + ": flush failed (disk full?)");
  const herr_t rc = H5Fclose(file_.release());
  finished_ = true;
  if (rc < 0) throw Error(path_ + ": close failed (disk full?)");
}

}  // namespace gt
