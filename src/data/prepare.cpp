#include "src/data/prepare.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include "src/core/error.hpp"
#include "src/data/dataset_file.hpp"
#include "src/data/dataset_writer.hpp"
#include "src/data/hash.hpp"
#include "src/vision/prepare_images.hpp"
#include "src/data/tokenizer.hpp"

namespace fs = std::filesystem;

namespace gt {

namespace {

constexpr size_t kReadChunk = size_t(1) << 20;      // bytes read from a file at a time
constexpr size_t kMaxCarry = size_t(16) << 20;      // a chunk with no safe cut point grows up to this

struct InputFile {
  std::string path;
  int64_t bytes;
  Split split = Split::Train;
};

std::vector<InputFile> collect_inputs(const std::vector<std::string>& inputs) {
  std::vector<InputFile> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw Error(in + ": no such file or directory");
    if (fs::is_directory(st)) {
      std::vector<InputFile> found;
      for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->is_symlink()) continue;
        if (it->is_regular_file()) found.push_back({it->path().string(), int64_t(it->file_size())});
      }
      if (ec) throw Error(in + ": cannot list directory (" + ec.message() + ")");
      std::sort(found.begin(), found.end(), [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(st)) {
      files.push_back({in, int64_t(fs::file_size(in))});
    } else {
      throw Error(in + ": not a regular file or directory");
    }
  }
  files.erase(std::remove_if(files.begin(), files.end(), [](const InputFile& f) { return f.bytes == 0; }), files.end());
  return files;
}

// Whole documents to val, in a seeded hash order, while they fit in val_fraction of the bytes; at least one
// document when there are two or more and val_fraction > 0.
void assign_splits(std::vector<InputFile>& files, double val_fraction, uint64_t seed) {
  if (val_fraction <= 0 || files.size() < 2) return;
  int64_t total = 0;
  for (const InputFile& f : files) total += f.bytes;
  const double target = val_fraction * double(total);
  std::vector<size_t> order(files.size());
  std::vector<uint64_t> key(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    order[i] = i;
    key[i] = hash2(seed, fnv1a64(files[i].path.data(), files[i].path.size()));
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  double val = 0;
  size_t n_val = 0;
  for (size_t i : order) {
    if (n_val + 1 < files.size() && val + double(files[i].bytes) <= target) {
      files[i].split = Split::Val;
      val += double(files[i].bytes);
      ++n_val;
    }
  }
  if (n_val == 0) {  // every document is larger than the target: the smallest one goes
    size_t smallest = 0;
    for (size_t i = 1; i < files.size(); ++i)
      if (files[i].bytes < files[smallest].bytes) smallest = i;
    files[smallest].split = Split::Val;
  }
}

std::string default_bpe_dir() {
  if (const char* env = std::getenv("GRIDTRAIN_BPE_DIR")) return env;
  return std::string(GRIDTRAIN_SOURCE_DIR) + "/data/gpt2";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Tokenises one file as one document into the writer, reading it in chunks.
void add_document(const InputFile& f, Tokenizer& tok, DatasetWriter& w, uint64_t* fnv, std::vector<int32_t>& ids,
                  const std::function<void(int64_t)>& progress) {
  std::ifstream in(f.path, std::ios::binary);
  if (!in) throw Error(f.path + ": cannot open for reading");
  w.begin_document(f.split);
  std::string text;     // carried-over tail + new chunk
  std::vector<char> chunk(kReadChunk);
  uint64_t h = kFnvOffset;
  bool eof = false;
  while (!eof) {
    in.read(chunk.data(), std::streamsize(chunk.size()));
    const size_t got = size_t(in.gcount());
    if (in.bad()) throw Error(f.path + ": read error");
    eof = got < chunk.size() || in.peek() == std::char_traits<char>::eof();
    h = fnv1a64(chunk.data(), got, h);
    text.append(chunk.data(), got);
    size_t cut = eof ? text.size() : tok.safe_prefix(text);
    if (cut == 0 && text.size() >= kMaxCarry) {  // no safe point in 16 MiB: cut at a UTF-8 boundary anyway
      cut = text.size();
      while (cut > 0 && (static_cast<unsigned char>(text[cut - 1]) & 0xC0) == 0x80) --cut;
      if (cut > 0) --cut;
    }
    if (cut > 0) {
      ids.clear();
      tok.encode(std::string_view(text.data(), cut), ids);
      w.append(f.split, ids.data(), ids.size());
      text.erase(0, cut);
    }
    progress(int64_t(got));
  }
  w.end_document(f.split);
  *fnv = h;
}

}  // namespace

PrepareStats prepare_dataset(const PrepareOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.out.empty()) throw Error("prepare: --out FILE.h5 is required");
  if (opt.inputs.empty()) throw Error("prepare: no INPUT files or directories given");
  if (!(opt.val_fraction >= 0 && opt.val_fraction < 1)) throw Error("prepare: --val-fraction must be in [0, 1)");
  std::unique_ptr<Tokenizer> tok = make_tokenizer(opt.tokenizer, opt.bpe_dir.empty() ? default_bpe_dir() : opt.bpe_dir);
  std::vector<InputFile> files = collect_inputs(opt.inputs);
  if (files.empty()) throw Error("prepare: empty corpus (no non-empty files in the inputs)");
  assign_splits(files, opt.val_fraction, opt.seed);
  int64_t total = 0;
  for (const InputFile& f : files) total += f.bytes;

  const fs::path out(opt.out);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(opt.out + ": the output directory " + dir.string() + " does not exist");
  if (fs::is_directory(out, ec)) throw Error(opt.out + ": is a directory");
  const std::string tmp = opt.out + ".tmp." + std::to_string(getpid());

  PrepareStats st;
  st.files = int64_t(files.size());
  try {
    DatasetWriter w(tmp, tok->name(), tok->vocab_size(), tok->eot_id());
    std::vector<int32_t> ids;
    int64_t done = 0;
    double last = 0;
    auto progress = [&](int64_t bytes) {
      done += bytes;
      const double t = seconds_since(t0);
      if (opt.progress && t - last >= 2.0) {
        last = t;
        std::fprintf(stderr, "prepare: %.1f / %.1f MB (%.1f MB/s), %lld tokens\n", done / 1e6, total / 1e6,
                     done / 1e6 / t, (long long)(w.tokens(Split::Train) + w.tokens(Split::Val)));
      }
    };
    for (const InputFile& f : files) {
      uint64_t h = 0;
      add_document(f, *tok, w, &h, ids, progress);
      w.add_source(f.path, f.bytes, h, f.split);
    }
    for (Split s : {Split::Train, Split::Val}) {
      st.tokens[s == Split::Train ? 0 : 1] = w.tokens(s);
      st.documents[s == Split::Train ? 0 : 1] = w.documents(s);
    }
    st.bytes = done;
    w.finish();
    { DatasetFile check(tmp); }  // reopen: what we rename must read back
    fs::rename(tmp, out, ec);
    if (ec) throw Error(opt.out + ": cannot rename the finished " + tmp + " (" + ec.message() + ")");
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  st.seconds = seconds_since(t0);
  return st;
}

namespace {

const char* kPrepareUsage =
    "usage: gridtrain prepare --tokenizer byte|gpt2 [--bpe-dir DIR] --out FILE.h5 [--val-fraction 0.05] [--seed S]\n"
    "                         [--quiet] INPUT...\n"
    "  INPUT: UTF-8 text files or directories of them; one file is one document\n";

int world_rank_if_mpi() {
  int init = 0, fin = 0, rank = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

}  // namespace

int prepare_main(int argc, char** argv) {
  PrepareOptions opt;
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  // Image datasets (issue 21) have a command line of their own: src/vision/prepare_images.hpp.
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.rfind("--images", 0) == 0; }))
    return vision::prepare_images_main(args);
  try {
    try {
      for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i], value;
        const bool is_flag = a.rfind("--", 0) == 0;
        const size_t eq = a.find('=');
        bool has_value = false;
        if (is_flag && eq != std::string::npos) {
          value = a.substr(eq + 1);
          a = a.substr(0, eq);
          has_value = true;
        }
        auto next = [&]() -> std::string {
          if (has_value) return value;
          if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
          return args[++i];
        };
        if (a == "--help" || a == "-h") {
          std::fputs(kPrepareUsage, stdout);
          return 0;
        } else if (a == "--tokenizer") {
          opt.tokenizer = next();
          if (opt.tokenizer != "byte" && opt.tokenizer != "gpt2")
            throw std::invalid_argument("--tokenizer must be byte or gpt2, not '" + opt.tokenizer + "'");
        } else if (a == "--bpe-dir") {
          opt.bpe_dir = next();
        } else if (a == "--out" || a == "-o") {
          opt.out = next();
        } else if (a == "--val-fraction") {
          const std::string v = next();
          char* end = nullptr;
          opt.val_fraction = std::strtod(v.c_str(), &end);
          if (v.empty() || *end || !(opt.val_fraction >= 0 && opt.val_fraction < 1))
            throw std::invalid_argument("--val-fraction must be a number in [0, 1), not '" + v + "'");
        } else if (a == "--seed") {
          const std::string v = next();
          char* end = nullptr;
          opt.seed = std::strtoull(v.c_str(), &end, 10);
          if (v.empty() || *end) throw std::invalid_argument("--seed must be a non-negative integer, not '" + v + "'");
        } else if (a == "--quiet" || a == "-q") {
          opt.progress = false;
        } else if (is_flag) {
          throw std::invalid_argument("unknown option " + a);
        } else {
          opt.inputs.push_back(a);
        }
      }
      if (opt.out.empty()) throw std::invalid_argument("--out FILE.h5 is required");
      if (opt.inputs.empty()) throw std::invalid_argument("no INPUT files or directories given");
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%sgridtrain: error: prepare: %s\n", kPrepareUsage, e.what());
      return 2;
    }
    if (world_rank_if_mpi() != 0) return 0;
    const PrepareStats st = prepare_dataset(opt);
    std::printf("prepare: %s: %lld files, %.2f MB -> train %lld tokens (%lld documents), val %lld tokens (%lld "
                "documents), %s tokenizer, %.2f s (%.1f MB/s)\n",
                opt.out.c_str(), (long long)st.files, st.bytes / 1e6, (long long)st.tokens[0],
                (long long)st.documents[0], (long long)st.tokens[1], (long long)st.documents[1],
                opt.tokenizer.c_str(), st.seconds, st.bytes / 1e6 / std::max(st.seconds, 1e-9));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "gridtrain: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gt
