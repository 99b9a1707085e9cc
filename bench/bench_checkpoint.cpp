// bench_checkpoint: write and read bandwidth of a sharded checkpoint the size of gpt2-124m's training state
// (params + AdamW m + v = 3 x 124.4M float32 = 1.49 GB, the real tensor list), against the disk's own
// sequential write bandwidth with fsync (dd conv=fsync) measured in the same run.
//
// Run (on an idle machine for clean figures; the output records `uptime` before and after):
//   mpiexec -n 2 build-io/bench/bench_checkpoint                        # defaults below
//   mpiexec -n 2 build-io/bench/bench_checkpoint --split tensors --no-verify --independent
//       --align 0 --hint romio_cb_write=disable --dir runs/bench/ckpt --out runs/bench/checkpoint.txt
//   (one line; wrapped here)
// Options:
//   --split rows|tensors  rows: every tensor split by dim 0 over the ranks (default); tensors: whole tensors
//                         dealt to the least-loaded rank (one contiguous dataset per rank per tensor)
//   --no-verify           skip the read-back checksum pass before the rename
//   --independent         independent MPI-IO for every tensor (default: collective from 16 MiB up)
//   --collective          collective MPI-IO for every tensor
//   --collective-min B    collective for tensors of at least B bytes
//   --align BYTES         H5Pset_alignment for objects >= 1 MiB (default 1 MiB; 0 = off)
//   --hint KEY=VALUE      MPI-IO hint, repeatable (cb_buffer_size, romio_cb_write, romio_ds_write, ...)
//   --layers N            transformer blocks (default 12; smaller for a quick try)
//   --reps N              repetitions of (dd, save) pairs and of load (default 3); medians are reported
//   --keep-files          keep the checkpoint directory (removed by default: it is 1.5 GB)
// Reads are measured after `sync; echo 3 > /proc/sys/vm/drop_caches` when that is allowed (needs root
// outside a container); otherwise they come from the page cache, and the output says so.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/checksum.hpp"

namespace fs = std::filesystem;

namespace {

using gt::bench::shell_line;

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
};

// gpt2-124m (vocab padded to 50304, context 1024, C = 768), in the order the model holds them.
std::vector<Spec> gpt2_tensors(int layers) {
  const int64_t C = 768;
  std::vector<Spec> p = {{"wte", {50304, C}}, {"wpe", {1024, C}}};
  for (int l = 0; l < layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const Spec& s : std::vector<Spec>{{"ln_1.w", {C}},
                                           {"ln_1.b", {C}},
                                           {"attn.qkv.w", {3, C, C}},
                                           {"attn.qkv.b", {3, C}},
                                           {"attn.proj.w", {C, C}},
                                           {"attn.proj.b", {C}},
                                           {"ln_2.w", {C}},
                                           {"ln_2.b", {C}},
                                           {"mlp.fc.w", {4 * C, C}},
                                           {"mlp.fc.b", {4 * C}},
                                           {"mlp.proj.w", {C, 4 * C}},
                                           {"mlp.proj.b", {C}}})
      p.push_back({h + s.name, s.shape});
  }
  p.push_back({"ln_f.w", {C}});
  p.push_back({"ln_f.b", {C}});
  std::vector<Spec> all;
  for (const char* group : {"params/", "adam_m/", "adam_v/"})
    for (const Spec& s : p) all.push_back({group + s.name, s.shape});
  return all;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}


double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// dd's own figure: "N bytes (...) copied, S s, R MB/s" -> seconds S.
double dd_seconds(const std::string& dir, int64_t mib) {
  const std::string file = dir + "/dd_probe.bin";
  const std::string out = shell_line("dd if=/dev/zero of=" + file + " bs=1M count=" + std::to_string(mib) +
                                " conv=fsync 2>&1 | tail -1");
  fs::remove(file);
  const size_t comma = out.find("copied, ");
  return comma == std::string::npos ? -1 : std::atof(out.c_str() + comma + 8);
}

bool drop_caches() {
  shell_line("sync");
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  f.close();
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string split = "rows", dir = "runs/bench/ckpt_bench", out_path = "runs/bench/checkpoint.txt";
  int layers = 12, reps = 3;
  bool keep_files = false;
  gt::CheckpointOptions opt;
  opt.keep = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw gt::Error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--split") split = next();
    else if (a == "--dir") dir = next();
    else if (a == "--out") out_path = next();
    else if (a == "--layers") layers = std::stoi(next());
    else if (a == "--reps") reps = std::max(1, std::stoi(next()));
    else if (a == "--no-verify") opt.verify_after_write = false;
    else if (a == "--independent") opt.collective_min_bytes = INT64_MAX;
    else if (a == "--collective") opt.collective_min_bytes = 0;
    else if (a == "--collective-min") opt.collective_min_bytes = std::stoll(next());
    else if (a == "--align") opt.alignment = std::stoll(next());
    else if (a == "--keep-files") keep_files = true;
    else if (a == "--hint") {
      const std::string kv = next();
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) throw gt::Error("--hint wants KEY=VALUE");
      opt.mpi_hints[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else {
      if (rank == 0) std::fprintf(stderr, "unknown option %s (see the header of bench_checkpoint.cpp)\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (split != "rows" && split != "tensors") {
    if (rank == 0) std::fprintf(stderr, "--split rows|tensors\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  opt.dir = dir + "/ckpt";

  // This rank's shards and their buffers.
  const std::vector<Spec> specs = gpt2_tensors(layers);
  std::vector<gt::TensorShard> shards;
  std::vector<int64_t> load(size, 0);
  int64_t total_elems = 0, my_elems = 0;
  for (const Spec& s : specs) {
    total_elems += numel(s.shape);
    gt::TensorShard t;
    t.name = s.name;
    t.global_shape = s.shape;
    t.start.assign(s.shape.size(), 0);
    t.count = s.shape;
    if (split == "rows") {
      t.start[0] = rank * s.shape[0] / size;
      t.count[0] = (rank + 1) * s.shape[0] / size - t.start[0];
    } else {  // same greedy deal on every rank: the rank with the fewest bytes so far takes the tensor
      const int owner = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      load[owner] += numel(s.shape);
      if (owner != rank) continue;
    }
    my_elems += numel(t.count);
    shards.push_back(t);
  }
  std::vector<float> buf(my_elems);
  for (int64_t i = 0; i < my_elems; ++i) buf[i] = static_cast<float>((i * 2654435761ll + rank) % 1000003) * 1e-6f;
  int64_t off = 0;
  for (gt::TensorShard& t : shards) {
    t.data = buf.data() + off;
    off += numel(t.count);
  }
  const double bytes = 4.0 * total_elems, mb = bytes / 1e6;

  std::ostringstream rep;
  char line[512];
  auto emit = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    rep << line << '\n';
  };
  if (rank == 0) {
    fs::create_directories(dir);
    const std::time_t t = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    emit("date = %s", date);
    emit("uptime_before = %s", shell_line("uptime").c_str());
    emit("ranks = %d  split = %s  layers = %d  tensors = %zu  bytes = %.0f (%.1f MB)", size, split.c_str(), layers,
         specs.size(), bytes, mb);
    std::string hints;
    for (const auto& [k, v] : opt.mpi_hints) hints += k + "=" + v + " ";
    emit("verify_after_write = %d  collective_min_bytes = %lld  alignment = %lld  hints = %s", opt.verify_after_write,
         static_cast<long long>(opt.collective_min_bytes), static_cast<long long>(opt.alignment), hints.empty() ? "(none)" : hints.c_str());
  }

  // Checksum cost alone (rank-local work, part of every save and load).
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  uint64_t sink = 0;
  for (const gt::TensorShard& t : shards) sink += gt::io::hyperslab_checksum(t.data, t.global_shape, t.start, t.count);
  double checksum_s = now() - t0, checksum_max = 0;
  MPI_Reduce(&checksum_s, &checksum_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) emit("checksum_s = %.3f (slowest rank; %.0f MB/s per rank; sink %llx)", checksum_max,
                      mb / size / checksum_max, static_cast<unsigned long long>(sink & 0xff));

  // Disk speed drifts a lot on a shared virtual disk (host write cache), so dd runs before and after every
  // save (reps + 1 runs) and each save is compared with the mean time of its two neighbours.
  const int64_t dd_mib = static_cast<int64_t>(bytes / (1 << 20));
  std::vector<double> dd_s, write_s, read_s, dirty_kb;
  std::string path, read_source;
  try {
    for (int r = 0; r < reps; ++r) {
      double d = rank == 0 ? dd_seconds(dir, dd_mib) : 0;
      dd_s.push_back(d);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now();
      path = gt::save_checkpoint(MPI_COMM_WORLD, opt, 1000 + r, shards, gt::CheckpointMeta{});
      write_s.push_back(now() - t0);
      // Evidence that the fsync happened: little dirty page cache should be left right after a save.
      if (rank == 0) dirty_kb.push_back(std::atof(shell_line("grep '^Dirty:' /proc/meminfo | tr -s ' ' | cut -d' ' -f2").c_str()));
    }
    dd_s.push_back(rank == 0 ? dd_seconds(dir, dd_mib) : 0);
    for (int r = 0; r < reps; ++r) {
      int dropped = rank == 0 ? drop_caches() : 0;
      MPI_Bcast(&dropped, 1, MPI_INT, 0, MPI_COMM_WORLD);
      read_source = dropped ? "disk (caches dropped)" : "page cache (drop_caches refused)";
      std::fill(buf.begin(), buf.end(), 0.f);
      gt::CheckpointMeta meta;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now();
      gt::load_checkpoint(MPI_COMM_WORLD, path, shards, meta);
      read_s.push_back(now() - t0);
    }
  } catch (const gt::Error& e) {
    std::fprintf(stderr, "rank %d: gridtrain: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  if (rank == 0) {
    const double dd_mb = static_cast<double>(dd_mib) * (1 << 20) / 1e6;
    using gt::bench::median;
    std::vector<double> ratio;
    for (int r = 0; r < reps; ++r) {
      const double dd_bw = dd_mb / (0.5 * (dd_s[r] + dd_s[r + 1])), bw = mb / write_s[r];
      ratio.push_back(bw / dd_bw);
      emit("rep %d: dd_write_MBps = %.1f  save_s = %.3f  write_MBps = %.1f  (%.0f%% of dd)  dirty after save %.0f kB", r,
           dd_bw, write_s[r], bw, 100 * bw / dd_bw, dirty_kb[r]);
    }
    std::string all_dd;
    for (double d : dd_s) all_dd += std::to_string(static_cast<int>(dd_mb / d)) + " ";
    emit("dd runs MB/s: %s", all_dd.c_str());
    emit("median: dd_write_MBps = %.1f  write_MBps = %.1f  ratio = %.0f%% (dd bs=1M conv=fsync, same size)",
         dd_mb / median(dd_s), mb / median(write_s), 100 * median(ratio));
    emit("load_s median = %.3f over %d  ->  read_MBps = %.1f  from %s", median(read_s), reps, mb / median(read_s),
         read_source.c_str());
    emit("uptime_after = %s", shell_line("uptime").c_str());
    std::cout << rep.str();
    fs::create_directories(fs::path(out_path).parent_path().empty() ? "." : fs::path(out_path).parent_path());
    std::ofstream(out_path) << rep.str();
    std::cout << "written to " << out_path << '\n';
    if (!keep_files) fs::remove_all(opt.dir);
  }
  MPI_Finalize();
  return 0;
}
