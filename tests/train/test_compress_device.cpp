// Top-k compression on device memory (src/train/compress/topk_device.hpp, the kernels of topk_kernels.hpp)
// against the host path it replaces on GPU builds (topk.cpp, topk_allreduce.cpp), which test_compress checks
// against naive references: the same selected set (exact and sampled), the same residual and the same sums, bit
// for bit, for every transport and wire value type, on 2 and 3 ranks. Buffers live in the kernels' memory space
// (device memory on a GPU build; the host copies compared here come back through Kokkos mirrors).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kokkos_compat.hpp"
#include "src/core/error.hpp"
#include "src/train/compress/topk_allreduce.hpp"
#include "src/train/compress/topk_device.hpp"

namespace gc = gt::compress;

namespace {

int rank_of() { int r = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }

template <class T>
Kokkos::View<T*, gt::mem_space> to_device(const std::vector<T>& h) {
  Kokkos::View<T*, gt::mem_space> d("test_buffer", h.size());
  Kokkos::deep_copy(d, Kokkos::View<const T*, gt::host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()));
  return d;
}
template <class T>
std::vector<T> to_host(const Kokkos::View<T*, gt::mem_space>& d) {
  std::vector<T> h(d.size());
  Kokkos::deep_copy(Kokkos::View<T*, gt::host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()), d);
  return h;
}

// Values with many ties (a grid of 1/256), both zeros, a NaN, infinities, subnormals and entries beyond fp16's
// range: every branch of the ranking key and of the saturating take.
std::vector<float> data_of(int rank, size_t n, int salt, bool grid) {
  std::mt19937_64 g(7 + 7919 * rank + 31 * n + 1000003 * salt);
  std::uniform_int_distribution<int> u(-512, 512);
  std::normal_distribution<float> z(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = grid ? float(u(g)) / 256.0f : z(g);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.0f, 1e-40f, -3e-42f, 1.0e5f, -7.0e4f};
  if (n > 64)
    for (size_t s = 0; s < sizeof(specials) / sizeof(float); ++s) v[(s * 7919 + salt) % n] = specials[s];
  return v;
}

// Bitwise equality of float vectors (NaN equal to NaN of the same bits).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

// select_device vs select: exact and sampled, sizes below and above the sampling cut (65536), k from 1 to n.
TEST(CompressDevice, SelectionEqualsHost) {
  gc::TopkWorkspace ws;
  for (size_t n : {size_t(1), size_t(5), size_t(1000), size_t(65537), size_t(200003)}) {
    for (bool grid : {true, false}) {
      const auto x = data_of(rank_of(), n, 1, grid);
      const auto x_d = to_device(x);
      for (double d : {0.0005, 0.01, 0.04, 0.3, 1.0}) {
        const size_t k = gc::topk_count(n, d);
        for (gc::Select how : {gc::Select::Exact, gc::Select::Sampled}) {
          std::vector<int32_t> want;
          gc::select(how, x.data(), n, k, 42 + n, want);
          Kokkos::View<int32_t*, gt::mem_space> idx("idx", k);
          const size_t m = gc::select_device(how, x_d.data(), n, k, 42 + n, idx.data(), ws);
          auto got = to_host(idx);
          EXPECT_EQ(m, want.size()) << "n=" << n << " d=" << d << " sampled=" << int(how == gc::Select::Sampled);
          want.resize(k, -1);  // the device pads as topk_allreduce pads the host's selection
          EXPECT_EQ(got, want) << "n=" << n << " d=" << d << " grid=" << grid
                               << " sampled=" << int(how == gc::Select::Sampled);
        }
      }
    }
  }
}

// A bucket of one value everywhere: the k-th largest is a tie of all n, and the lowest k indices are taken.
TEST(CompressDevice, AllEqualKeysTakeLowestIndices) {
  gc::TopkWorkspace ws;
  const size_t n = 70001, k = 2801;
  std::vector<float> x(n, -0.5f);
  for (size_t i = 0; i < n; i += 3) x[i] = 0.5f;  // the same key, either sign
  const auto x_d = to_device(x);
  Kokkos::View<int32_t*, gt::mem_space> idx("idx", k);
  EXPECT_EQ(gc::select_device(gc::Select::Exact, x_d.data(), n, k, 1, idx.data(), ws), k);
  const auto got = to_host(idx);
  for (size_t j = 0; j < k; ++j) ASSERT_EQ(got[j], int32_t(j));
}

// topk_start_device vs topk_start on every transport, value type and selection, with and without error feedback:
// the summed gradient and the residual equal bit for bit, and the reports (k, transport, bytes) agree.
TEST(CompressDevice, TransportsEqualHost) {
  const int me = rank_of();
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  gc::TopkWorkspace ws;  // reused across calls of every size, as GradBuckets reuses one per bucket
  for (gt::DType v : {gt::DType::F32, gt::DType::BF16, gt::DType::F16}) {
    for (bool shared : {false, true}) {
      for (gc::Select how : {gc::Select::Exact, gc::Select::Sampled}) {
        for (size_t n : {size_t(7), size_t(4099), size_t(70001)}) {
          for (double d : {0.01, 0.3, 1.0}) {
            // the selection does not see V: 16-bit values once sparse and once dense, below the sampling cut
            if (v != gt::DType::F32 && (n > 65536 || d == 0.3)) continue;
            for (bool feedback : {true, false}) {
              gc::TopkOptions o;
              o.density = d;
              o.select = how;
              o.allow_shared = shared;
              o.leader = 1 % comm->size();
              o.seed = 17 + n;
              o.values = v;
              o.error_feedback = feedback;
              auto res_h = data_of(me, n, 11, true), grad_h = data_of(me, n, 10, n < 70001);
              for (auto& r : res_h) r *= 0.25f;
              auto res_d = to_device(res_h), grad_d = to_device(grad_h);
              gc::ErrorFeedback ef_h(res_h.data(), n), ef_d(res_d.data(), n);
              const auto rh = gc::topk_allreduce(*comm, ef_h, grad_h.data(), n, o);
              o.workspace = &ws;
              auto req = gc::topk_start_device(*comm, ef_d, grad_d.data(), n, o);
              req->wait();
              const auto& rd = req->result();
              const std::string what = std::string(gc::transport_name(rh.transport)) + " n=" + std::to_string(n) +
                                       " d=" + std::to_string(d) + " values " + std::to_string(int(v)) +
                                       " sampled=" + std::to_string(int(how == gc::Select::Sampled)) +
                                       " feedback=" + std::to_string(int(feedback));
              EXPECT_EQ(rd.transport, rh.transport) << what;
              EXPECT_EQ(rd.k, rh.k) << what;
              EXPECT_EQ(rd.wire_bytes, rh.wire_bytes) << what;
              EXPECT_TRUE(same_bits(to_host(grad_d), grad_h)) << "sum, " << what;
              EXPECT_TRUE(same_bits(to_host(res_d), res_h)) << "residual, " << what;
              double norm_h = 0;  // the host's norm loop, against the device's blocked sum (another association)
              for (float r : res_h) norm_h += double(r) * r;
              const double norm_d = gc::norm2_device(ef_d);
              if (std::isfinite(norm_h)) {
                EXPECT_NEAR(norm_d, norm_h, 1e-12 * norm_h) << what;
              }
            }
          }
        }
      }
    }
  }
}

TEST(CompressDevice, BadOptionsAreErrors) {
  auto comm = gt::make_mpi_comm(MPI_COMM_WORLD, gt::AllreduceAlgo::Library);
  std::vector<float> r(8, 0.f), g(8, 1.f);
  auto r_d = to_device(r), g_d = to_device(g);
  gc::ErrorFeedback ef(r_d.data(), 8);
  gc::TopkOptions o;
  o.density = 0;
  EXPECT_THROW(gc::topk_start_device(*comm, ef, g_d.data(), 8, o), gt::Error);
  o.density = 0.5;
  o.values = gt::DType::I32;
  EXPECT_THROW(gc::topk_start_device(*comm, ef, g_d.data(), 8, o), gt::Error);
}
