#include "src/io/config_agree.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <vector>

#include "src/io/agree.hpp"

namespace gt::io {

namespace {

uint64_t fnv1a(const char* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
  return h;
}

// "key\tvalue\n" lines in key order (the map's), the same layout on every rank.
std::string serialize(const std::map<std::string, std::string>& config, const std::string& build_id) {
  std::string s = "build\t" + build_id + "\n";
  for (const auto& [k, v] : config) s += k + "\t" + v + "\n";
  return s;
}

std::map<std::string, std::string> parse(const std::string& s) {
  std::map<std::string, std::string> m;
  size_t p = 0;
  while (p < s.size()) {
    const size_t nl = s.find('\n', p), tab = s.find('\t', p);
    if (tab < nl) m[s.substr(p, tab - p)] = s.substr(tab + 1, nl - tab - 1);
    p = nl == std::string::npos ? s.size() : nl + 1;
  }
  return m;
}

}  // namespace

std::string build_identity() {
  std::ifstream f("/proc/self/exe", std::ios::binary);
  if (!f) return "";
  std::vector<char> buf(1 << 20);
  uint64_t h = 0xcbf29ce484222325ull;
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = fnv1a(buf.data(), static_cast<size_t>(f.gcount()), h);
  }
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void check_config_agreement(MPI_Comm comm, const std::map<std::string, std::string>& config,
                            const std::string& build_id) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string mine = serialize(config, build_id);
  const uint64_t h = fnv1a(mine.data(), mine.size());
  uint64_t lo_hi[2] = {h, ~h}, red[2] = {0, 0};
  MPI_Allreduce(lo_hi, red, 2, MPI_UINT64_T, MPI_MIN, comm);  // min of h and min of ~h (= ~max h)
  if (red[0] == h && ~red[1] == h) return;                    // every rank holds the same hash

  // Rare path: rank 0's text to everyone, each rank names its first difference, the lowest one is reported.
  std::string ref = rank == 0 ? mine : std::string();
  int len = static_cast<int>(ref.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  ref.resize(len);
  MPI_Bcast(ref.data(), len, MPI_CHAR, 0, comm);
  std::string problem;
  if (mine != ref) {
    const std::map<std::string, std::string> a = parse(ref), b = parse(mine);
    for (const auto& [k, v] : b) {
      const auto it = a.find(k);
      const std::string v0 = it == a.end() ? "(absent)" : it->second;
      if (v0 == v) continue;
      problem = k == "build" ? "rank " + std::to_string(rank) + " runs another gridtrain build than rank 0 (executable hash " +
                                   v + " vs " + v0 + ")"
                             : "configuration differs between ranks: '" + k + "' is " + v + " on rank " +
                                   std::to_string(rank) + " but " + v0 + " on rank 0 (every rank must read the same "
                                   "deck and overrides)";
      break;
    }
    if (problem.empty()) problem = "configuration differs between rank " + std::to_string(rank) + " and rank 0";
  }
  agree(comm, problem);
}

}  // namespace gt::io
