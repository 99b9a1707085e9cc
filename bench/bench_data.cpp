// Data pipeline benchmark: how fast `prepare` turns text into a token dataset, and how fast the reader delivers
// the `small` preset's batches (B=4 sequences of T=256 tokens per rank and micro-batch) compared with what
// training consumes (the small preset trains at roughly 2000-5000 tokens/s per rank on the development CPU;
// --train-tokens-per-s sets the figure, default the fast end).
//
//   cmake --build build --target bench_data gridtrain-prepare
//   ./build/bench/bench_data                         # prepare from /usr/share/common-licenses copies, then read
//   ./build/bench/bench_data --dataset data/common-licenses.h5 --prepare-mb 0
//
// Prepare: the licence texts of /usr/share/common-licenses copied into a corpus of --prepare-mb MB (default 32;
// 8 for GPT-2 BPE, when data/gpt2 or --bpe-dir has the files), prepared with the byte and the gpt2 tokenizer;
// for gpt2 also the texts once ("gpt2-once": no repeated text, so the word cache does not help);
// MB/s of input text, wall clock including the HDF5 write. The corpus files were just written, so they are read
// from the page cache: this is the CPU cost of tokenising and writing, not the disk.
// Read: random samples of the dataset (its seeded epoch permutation), one batch of B rows of T+1 tokens per
// call, for --seconds each:
//   direct     HDF5Source::read in a loop (one hyperslab per row)
//   cold       the same, but the file's pages are dropped from the page cache (posix_fadvise DONTNEED on this
//              file only) before every batch, so each row is read from the disk; --cold-batches batches
//              (only for files of 16 MiB and more: HDF5's own 1 MiB chunk cache serves much of a smaller one)
//   prefetch   BatchPrefetcher (depth 2) with nothing else to do: the background thread's throughput
//   overlap    a training loop at --train-tokens-per-s (the step's compute simulated by sleeping): data time
//              per step that is still exposed, direct vs prefetched
// The dataset file is in the page cache after its first read (a warm cache, as in any epoch after the first).
// Figures go to stdout and --out (default runs/bench/data.json), with the load average at start and end.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"
#include "src/core/error.hpp"
#include "src/data/hdf5_source.hpp"
#include "src/data/prefetch.hpp"
#include "src/data/prepare.hpp"
#include "src/data/tokenizer.hpp"

namespace fs = std::filesystem;

namespace {

using gt::bench::json_escape;
using gt::bench::shell_line;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }



struct Options {
  std::string dataset, out = "runs/bench/data.json", bpe_dir, work;
  double prepare_mb = 32, bpe_mb = 8, seconds = 3, train_tok_s = 5000;
  int B = 4, T = 256, depth = 2, overlap_steps = 20, cold_batches = 300;
};

struct PrepareFigure {
  std::string tokenizer;
  double mb = 0, seconds = 0, mb_per_s = 0, tokens = 0;
  double load_s = 0;  // of that, loading the tokenizer (measured on its own)
};

// Copies of the licence texts (each a document) until `mb` MB (mb <= 0: each text once); returns the directory.
std::string make_corpus(const std::string& dir, double mb) {
  const std::string src = "/usr/share/common-licenses";
  std::vector<std::string> texts;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src, ec)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (texts.empty()) throw gt::Error(src + ": no licence texts to build the corpus from (use --dataset)");
  fs::remove_all(dir);
  fs::create_directories(dir);
  size_t total = 0, n = 0;
  while (double(total) < mb * 1e6 || n < (mb > 0 ? 0 : texts.size())) {  // mb <= 0: every text once
    const std::string& t = texts[n % texts.size()];
    std::ofstream(dir + "/doc" + std::to_string(n) + ".txt", std::ios::binary).write(t.data(), std::streamsize(t.size()));
    total += t.size();
    ++n;
  }
  return dir;
}

PrepareFigure bench_prepare(const Options& o, const std::string& tokenizer, double mb, const std::string& out,
                            const std::string& label) {
  const std::string corpus = make_corpus(o.work + "/corpus_" + tokenizer, mb);
  gt::PrepareOptions p;
  p.tokenizer = tokenizer;
  p.bpe_dir = o.bpe_dir;
  p.out = out;
  p.inputs = {corpus};
  p.progress = false;
  const gt::PrepareStats st = gt::prepare_dataset(p);
  fs::remove_all(corpus);
  PrepareFigure f;
  const double t0 = now();
  gt::make_tokenizer(tokenizer, o.bpe_dir);
  f.load_s = now() - t0;
  f.tokenizer = label;
  f.mb = double(st.bytes) / 1e6;
  f.seconds = st.seconds;
  f.mb_per_s = f.mb / st.seconds;
  f.tokens = double(st.tokens[0] + st.tokens[1]);
  std::printf("prepare %-12s %7.2f MB of text in %6.3f s (%.3f s loading the tokenizer): %6.1f MB/s, %.3g tokens "
              "(%.2f bytes/token)\n",
              label.c_str(), f.mb, f.seconds, f.load_s, f.mb_per_s, f.tokens, double(st.bytes) / f.tokens);
  return f;
}

struct ReadFigure {
  std::string dataset, mode;
  int token_bytes = 0;
  double batches = 0, seconds = 0, tokens_per_s = 0, ms_per_batch = 0;
};

// Global samples of batch k on this (single) rank: the trainer's order, B consecutive samples per batch.
std::vector<int64_t> batch_samples(int64_t k, int B) {
  std::vector<int64_t> s(static_cast<size_t>(B));
  for (int b = 0; b < B; ++b) s[size_t(b)] = k * B + b;
  return s;
}

ReadFigure bench_direct(const Options& o, const std::string& path) {
  gt::HDF5Source src(path, o.T, 1234);
  std::vector<int32_t> rows(size_t(o.B) * (o.T + 1));
  for (int64_t k = 0; k < 20; ++k) src.read(gt::Split::Train, batch_samples(k, o.B).data(), o.B, rows.data());  // warm-up
  int64_t k = 20;
  const double t0 = now();
  double t = t0;
  while (t - t0 < o.seconds) {
    for (int i = 0; i < 50; ++i, ++k) src.read(gt::Split::Train, batch_samples(k, o.B).data(), o.B, rows.data());
    t = now();
  }
  ReadFigure f{path, "direct", src.info().token_bytes, double(k - 20), t - t0};
  return f;
}

// Drops the file's pages from the page cache (this file only: harmless to others on a shared machine).
void evict(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

ReadFigure bench_cold(const Options& o, const std::string& path) {
  gt::HDF5Source src(path, o.T, 4321);  // another seed: other windows than the warm runs read
  std::vector<int32_t> rows(size_t(o.B) * (o.T + 1));
  double t = 0;
  for (int k = 0; k < o.cold_batches; ++k) {
    evict(path);
    const double t0 = now();
    src.read(gt::Split::Train, batch_samples(k, o.B).data(), o.B, rows.data());
    t += now() - t0;
  }
  ReadFigure f{path, "cold", src.info().token_bytes, double(o.cold_batches), t};
  return f;
}

ReadFigure bench_prefetch(const Options& o, const std::string& path) {
  gt::HDF5Source src(path, o.T, 1234);
  gt::BatchPrefetcher pf(src, o.depth);
  std::vector<int32_t> rows(size_t(o.B) * (o.T + 1));
  int64_t requested = 0, taken = 0;
  auto fill = [&] {
    while (requested - taken < o.depth) pf.request(gt::Split::Train, batch_samples(requested++, o.B));
  };
  for (int i = 0; i < 20; ++i) {  // warm-up
    fill();
    pf.take(rows.data());
    ++taken;
  }
  const int64_t first = taken;
  const double t0 = now();
  double t = t0;
  while (t - t0 < o.seconds) {
    for (int i = 0; i < 50; ++i) {
      fill();
      pf.take(rows.data());
      ++taken;
    }
    t = now();
  }
  ReadFigure f{path, "prefetch", src.info().token_bytes, double(taken - first), t - t0};
  return f;
}

struct OverlapFigure {
  double step_ms = 0, exposed_direct_ms = 0, exposed_prefetch_ms = 0;
};

// A training loop whose compute takes B*T / train_tok_s seconds per step (slept, so it leaves the core to the
// prefetch thread as a real step would only partly do): the data time each step still waits for.
OverlapFigure bench_overlap(const Options& o, const std::string& path) {
  OverlapFigure f;
  const double step_s = double(o.B) * o.T / o.train_tok_s;
  f.step_ms = 1e3 * step_s;
  std::vector<int32_t> rows(size_t(o.B) * (o.T + 1));
  {
    gt::HDF5Source src(path, o.T, 99);
    double waited = 0;
    for (int s = 0; s < o.overlap_steps; ++s) {
      const double t0 = now();
      src.read(gt::Split::Train, batch_samples(s, o.B).data(), o.B, rows.data());
      waited += now() - t0;
      std::this_thread::sleep_for(std::chrono::duration<double>(step_s));
    }
    f.exposed_direct_ms = 1e3 * waited / o.overlap_steps;
  }
  {
    gt::HDF5Source src(path, o.T, 99);
    gt::BatchPrefetcher pf(src, 1);
    double waited = 0;
    pf.request(gt::Split::Train, batch_samples(0, o.B));
    for (int s = 0; s < o.overlap_steps; ++s) {
      const double t0 = now();
      pf.take(rows.data());
      pf.request(gt::Split::Train, batch_samples(s + 1, o.B));  // the next batch reads during this step
      waited += now() - t0;
      std::this_thread::sleep_for(std::chrono::duration<double>(step_s));
    }
    pf.take(rows.data());
    f.exposed_prefetch_ms = 1e3 * waited / o.overlap_steps;
  }
  return f;
}

void finish(ReadFigure& f, const Options& o) {
  f.tokens_per_s = f.batches * o.B * o.T / f.seconds;
  f.ms_per_batch = 1e3 * f.seconds / f.batches;
  std::printf("read %-8s uint%-2d  %8.0f batches in %5.2f s: %6.3f ms/batch, %10.0f tokens/s = %6.0fx training (%g tok/s)\n",
              f.mode.c_str(), 8 * f.token_bytes, f.batches, f.seconds, f.ms_per_batch, f.tokens_per_s,
              f.tokens_per_s / o.train_tok_s, o.train_tok_s);
}

void usage() {
  std::puts(
      "usage: bench_data [--dataset FILE.h5] [--prepare-mb 32] [--bpe-mb 8] [--bpe-dir DIR] [--seconds 3]\n"
      "                  [--train-tokens-per-s 5000] [--B 4] [--T 256] [--depth 2] [--overlap-steps 20]\n"
      "                  [--cold-batches 300]\n"
      "                  [--work DIR] [--out runs/bench/data.json]\n"
      "  --prepare-mb 0 / --bpe-mb 0 skip the prepare figures; without --dataset the byte dataset just prepared\n"
      "  (or, with --prepare-mb 0, data/common-licenses.h5) is read");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw gt::Error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--dataset") o.dataset = next();
      else if (a == "--out") o.out = next();
      else if (a == "--bpe-dir") o.bpe_dir = next();
      else if (a == "--work") o.work = next();
      else if (a == "--prepare-mb") o.prepare_mb = std::stod(next());
      else if (a == "--bpe-mb") o.bpe_mb = std::stod(next());
      else if (a == "--seconds") o.seconds = std::stod(next());
      else if (a == "--train-tokens-per-s") o.train_tok_s = std::stod(next());
      else if (a == "--B") o.B = std::stoi(next());
      else if (a == "--T") o.T = std::stoi(next());
      else if (a == "--depth") o.depth = std::stoi(next());
      else if (a == "--overlap-steps") o.overlap_steps = std::stoi(next());
      else if (a == "--cold-batches") o.cold_batches = std::stoi(next());
      else if (a == "--help" || a == "-h") { usage(); return 0; }
      else throw gt::Error("unknown option " + a);
    }
    if (o.B < 1 || o.T < 1 || o.depth < 1 || o.seconds <= 0 || o.train_tok_s <= 0 || o.overlap_steps < 1)
      throw gt::Error("--B, --T, --depth, --overlap-steps, --seconds and --train-tokens-per-s must be positive");
    if (o.work.empty()) o.work = (fs::path(o.out).parent_path() / "data_work").string();
    if (o.bpe_dir.empty())
      o.bpe_dir = std::getenv("GRIDTRAIN_BPE_DIR") ? std::getenv("GRIDTRAIN_BPE_DIR") : std::string(GRIDTRAIN_SOURCE_DIR) + "/data/gpt2";
    fs::create_directories(o.work);
    if (fs::path(o.out).has_parent_path()) fs::create_directories(fs::path(o.out).parent_path());

    const std::string load_start = shell_line("cat /proc/loadavg");
    const std::string date = shell_line("date -u +%Y-%m-%dT%H:%M:%SZ");
    const std::string host = shell_line("hostname");
    const std::string cpu = shell_line("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'");
    std::printf("bench_data: B=%d T=%d, training consumes %g tokens/s per rank, %s, %s\nload at start: %s\n", o.B, o.T,
                o.train_tok_s, host.c_str(), cpu.c_str(), load_start.c_str());

    std::vector<PrepareFigure> prep;
    std::string byte_h5 = o.work + "/bench_byte.h5", gpt2_h5 = o.work + "/bench_gpt2.h5";
    bool have_byte = false, have_gpt2 = false;
    if (o.prepare_mb > 0) {
      prep.push_back(bench_prepare(o, "byte", o.prepare_mb, byte_h5, "byte"));
      have_byte = true;
    }
    const bool bpe = fs::exists(o.bpe_dir + "/encoder.json") && fs::exists(o.bpe_dir + "/vocab.bpe");
    if (o.bpe_mb > 0 && bpe) {
      // the licences once (no text repeats: every word goes through the merges) and copies of them (the
      // tokenizer's word cache then serves the repeats, as it does for the frequent words of a real corpus)
      prep.push_back(bench_prepare(o, "gpt2", 0, gpt2_h5, "gpt2-once"));
      prep.push_back(bench_prepare(o, "gpt2", o.bpe_mb, gpt2_h5, "gpt2-copies"));
      have_gpt2 = true;
    } else if (o.bpe_mb > 0) {
      std::printf("prepare gpt2: skipped (no encoder.json/vocab.bpe in %s; scripts/fetch_gpt2_bpe.sh)\n", o.bpe_dir.c_str());
    }

    std::vector<std::string> datasets;
    if (!o.dataset.empty()) datasets.push_back(o.dataset);
    else if (have_byte) datasets.push_back(byte_h5);
    else datasets.push_back(std::string(GRIDTRAIN_SOURCE_DIR) + "/data/common-licenses.h5");
    if (o.dataset.empty() && have_gpt2) datasets.push_back(gpt2_h5);

    std::vector<ReadFigure> reads;
    std::vector<std::pair<std::string, OverlapFigure>> overlaps;
    for (const std::string& d : datasets) {
      std::printf("dataset %s\n", d.c_str());
      reads.push_back(bench_direct(o, d));
      finish(reads.back(), o);
      reads.push_back(bench_prefetch(o, d));
      finish(reads.back(), o);
      // a file that fits HDF5's chunk cache (1 MiB per dataset) would be served from memory after all
      if (o.cold_batches > 0 && fs::file_size(d) < (uintmax_t(16) << 20)) {
        std::printf("read cold: skipped (%s is under 16 MiB: HDF5's chunk cache would hold much of it)\n", d.c_str());
      } else if (o.cold_batches > 0) {
        reads.push_back(bench_cold(o, d));
        finish(reads.back(), o);
      }
      const OverlapFigure ov = bench_overlap(o, d);
      std::printf("overlap: step %.1f ms of compute (%g tok/s); data time exposed per step: direct %.3f ms, prefetch "
                  "%.3f ms\n",
                  ov.step_ms, o.train_tok_s, ov.exposed_direct_ms, ov.exposed_prefetch_ms);
      overlaps.push_back({d, ov});
    }
    for (const std::string& f : {byte_h5, gpt2_h5}) fs::remove(f);  // tens of MB, not worth keeping
    std::error_code ec;
    fs::remove(o.work, ec);  // only if empty (the user may have pointed --work somewhere shared)
    const std::string load_end = shell_line("cat /proc/loadavg");
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("load at end: %s; peak RSS %ld MiB\n", load_end.c_str(), ru.ru_maxrss / 1024);

    std::ofstream js(o.out);
    js << "{\n  \"bench\": \"data\", \"date\": \"" << date << "\", \"host\": \"" << json_escape(host) << "\", \"cpu\": \""
       << json_escape(cpu) << "\",\n  \"load_start\": \"" << load_start << "\", \"load_end\": \"" << load_end
       << "\",\n  \"B\": " << o.B << ", \"T\": " << o.T << ", \"train_tokens_per_s\": " << o.train_tok_s
       << ", \"prefetch_depth\": " << o.depth << ",\n  \"prepare\": [";
    for (size_t i = 0; i < prep.size(); ++i)
      js << (i ? ",\n" : "\n") << "    {\"tokenizer\": \"" << prep[i].tokenizer << "\", \"mb\": " << prep[i].mb
         << ", \"seconds\": " << prep[i].seconds << ", \"mb_per_s\": " << prep[i].mb_per_s
         << ", \"tokens\": " << prep[i].tokens << ", \"tokenizer_load_s\": " << prep[i].load_s << "}";
    js << "\n  ],\n  \"read\": [";
    for (size_t i = 0; i < reads.size(); ++i)
      js << (i ? ",\n" : "\n") << "    {\"dataset\": \"" << json_escape(reads[i].dataset) << "\", \"mode\": \""
         << reads[i].mode << "\", \"token_bytes\": " << reads[i].token_bytes << ", \"batches\": " << reads[i].batches
         << ", \"seconds\": " << reads[i].seconds << ", \"ms_per_batch\": " << reads[i].ms_per_batch
         << ", \"tokens_per_s\": " << reads[i].tokens_per_s
         << ", \"times_training\": " << reads[i].tokens_per_s / o.train_tok_s << "}";
    js << "\n  ],\n  \"overlap\": [";
    for (size_t i = 0; i < overlaps.size(); ++i)
      js << (i ? ",\n" : "\n") << "    {\"dataset\": \"" << json_escape(overlaps[i].first)
         << "\", \"step_ms\": " << overlaps[i].second.step_ms
         << ", \"exposed_direct_ms\": " << overlaps[i].second.exposed_direct_ms
         << ", \"exposed_prefetch_ms\": " << overlaps[i].second.exposed_prefetch_ms << "}";
    js << "\n  ]\n}\n";
    std::printf("wrote %s\n", o.out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_data: error: %s\n", e.what());
    return 1;
  }
}
