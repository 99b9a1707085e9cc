#include "src/train/report/metrics.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "kernels/gemm.hpp"
#include "src/core/error.hpp"

namespace gt {

void make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error("cannot create directory '" + cur + "': " + std::strerror(errno));
  }
}

double peak_rss_bytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

double pss_bytes() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  double kb = 0;
  while (f >> key) {
    if (key == "Pss:" && (f >> kb)) return kb * 1024.0;
    f.ignore(1 << 20, '\n');
  }
  return -1;
}

double measure_sgemm_gflops(int n, int reps) {
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n, 0.f);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float((i * 7919) % 1000) * 1e-3f - 0.5f;
    b[i] = float((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  detail::fp32_gemm(Op::N, Op::N, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);  // warm-up
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    detail::fp32_gemm(Op::N, Op::N, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
  }
  return 2.0 * n * double(n) * n / best * 1e-9;
}

}  // namespace gt
