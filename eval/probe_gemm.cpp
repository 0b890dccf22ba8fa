#include "eval/probe_gemm.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <Eigen/Core>

#include "common/blas_kernels.h"
#include "common/cpu_features.h"

namespace dialtree::eval {
namespace {

// C = L·R for row-major L [m, q], R [q, p8] and C [m, p8], p8 a multiple of 8: the two matrix
// products of the multinomial objective, which take most of a fit. Eigen is compiled for
// baseline x86-64 here (SSE2, about 11 GFLOP/s on the development machine); these register-
// blocked kernels are compiled for AVX2+FMA (4 rows x 8 columns, about 27 GFLOP/s) and AVX-512
// (6 rows x 8 columns, about 50 GFLOP/s) and chosen at run time; other CPUs use Eigen. Each
// element sums over q in order, so results are the same run to run on one machine (the kernels
// round with FMA, so machines with different instruction sets may differ in the last bits).

using Index = std::ptrdiff_t;

// Multiply-adds round once (FMA) in these kernels: gcc needs to be told per function; clang
// contracts `a += x * y` into an FMA by default (-ffp-contract=on) and has no such attribute.
#if defined(__clang__)
#define DIALTREE_FP_CONTRACT_FAST
#else
#define DIALTREE_FP_CONTRACT_FAST , optimize("fp-contract=fast")
#endif

__attribute__((target("arch=x86-64-v4") DIALTREE_FP_CONTRACT_FAST)) void matmul_avx512(
    const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  typedef double v8d __attribute__((vector_size(64), aligned(8), may_alias));
  for (Index i = 0; i < m; i += 6) {
    const Index rows = std::min<Index>(6, m - i);
    // Rows past m repeat the last row (computed, not stored): no branch in the inner loop.
    const double* l0 = l + i * q;
    const double* l1 = l + (i + std::min<Index>(1, rows - 1)) * q;
    const double* l2 = l + (i + std::min<Index>(2, rows - 1)) * q;
    const double* l3 = l + (i + std::min<Index>(3, rows - 1)) * q;
    const double* l4 = l + (i + std::min<Index>(4, rows - 1)) * q;
    const double* l5 = l + (i + std::min<Index>(5, rows - 1)) * q;
    for (Index col = 0; col < p8; col += 8) {
      v8d a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {};
      const double* rp = r + col;
      for (Index j = 0; j < q; ++j, rp += p8) {
        const v8d rv = *reinterpret_cast<const v8d*>(rp);
        a0 += l0[j] * rv;
        a1 += l1[j] * rv;
        a2 += l2[j] * rv;
        a3 += l3[j] * rv;
        a4 += l4[j] * rv;
        a5 += l5[j] * rv;
      }
      double* out = c + i * p8 + col;
      const v8d* acc[6] = {&a0, &a1, &a2, &a3, &a4, &a5};
      for (Index t = 0; t < rows; ++t) *reinterpret_cast<v8d*>(out + t * p8) = *acc[t];
    }
  }
}

__attribute__((target("arch=x86-64-v3") DIALTREE_FP_CONTRACT_FAST)) void matmul_avx2(
    const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
  for (Index i = 0; i < m; i += 4) {
    const Index rows = std::min<Index>(4, m - i);
    const double* l0 = l + i * q;
    const double* l1 = l + (i + std::min<Index>(1, rows - 1)) * q;
    const double* l2 = l + (i + std::min<Index>(2, rows - 1)) * q;
    const double* l3 = l + (i + std::min<Index>(3, rows - 1)) * q;
    for (Index col = 0; col < p8; col += 8) {
      v4d a0 = {}, b0 = {}, a1 = {}, b1 = {}, a2 = {}, b2 = {}, a3 = {}, b3 = {};
      const double* rp = r + col;
      for (Index j = 0; j < q; ++j, rp += p8) {
        const v4d r0 = *reinterpret_cast<const v4d*>(rp);
        const v4d r1 = *reinterpret_cast<const v4d*>(rp + 4);
        const double x0 = l0[j], x1 = l1[j], x2 = l2[j], x3 = l3[j];
        a0 += x0 * r0;
        b0 += x0 * r1;
        a1 += x1 * r0;
        b1 += x1 * r1;
        a2 += x2 * r0;
        b2 += x2 * r1;
        a3 += x3 * r0;
        b3 += x3 * r1;
      }
      double* out = c + i * p8 + col;
      const v4d* acc[8] = {&a0, &b0, &a1, &b1, &a2, &b2, &a3, &b3};
      for (Index t = 0; t < rows; ++t) {
        *reinterpret_cast<v4d*>(out + t * p8) = *acc[2 * t];
        *reinterpret_cast<v4d*>(out + t * p8 + 4) = *acc[2 * t + 1];
      }
    }
  }
}

#undef DIALTREE_FP_CONTRACT_FAST

/// probe_detail::matmul_rr() with this CPU's best kernel.
void matmul_best(const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  static const int level = probe_detail::matmul_level();
  probe_detail::matmul_rr(level, l, m, q, r, p8, c);
}

}  // namespace

namespace probe_detail {

int matmul_level() {
  // The tier that also chooses the BLAS kernels, of the flags CPUID reports (the kernels below
  // are compiled with target attributes: the processor itself must run them). cpu_kernel_tier()
  // does not ask for BMI1 and BMI2, which x86-64-v3 and v4 include: asked for here. Every CPU
  // with these also has the rest of its level (F16C, LZCNT, MOVBE, XSAVE).
  static const int level = [] {
    const CpuInfo& cpu = cpuid_cpu();
    if (!cpu.has("bmi1") || !cpu.has("bmi2")) return 0;
    const KernelTier tier = cpu_kernel_tier(cpu);
    return tier == KernelTier::Avx512 ? 4 : tier == KernelTier::Avx2 ? 3 : 0;
  }();
  return level;
}

void matmul_rr(int level, const double* l, std::ptrdiff_t m, std::ptrdiff_t q, const double* r,
               std::ptrdiff_t p8, double* c) {
  level = std::min(level, matmul_level());
  if (level >= 4) return matmul_avx512(l, m, q, r, p8, c);
  if (level >= 3) return matmul_avx2(l, m, q, r, p8, c);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<RowMajor>(c, m, p8).noalias() =
      Eigen::Map<const RowMajor>(l, m, q) * Eigen::Map<const RowMajor>(r, q, p8);
}

void matmul_rr_threads(const double* l, Index m, Index q, const double* r, Index p8, double* c,
                       int threads) {
  Index block = (m + threads - 1) / std::max(threads, 1);
  block = std::max<Index>(96, (block + 23) / 24 * 24);
  if (threads <= 1 || block >= m) {
    matmul_best(l, m, q, r, p8, c);
    return;
  }
  std::vector<std::thread> helpers;
  for (Index i = block; i < m; i += block) {
    const Index rows = std::min(block, m - i);
    helpers.emplace_back([=] { matmul_best(l + i * q, rows, q, r, p8, c + i * p8); });
  }
  matmul_best(l, block, q, r, p8, c);
  for (auto& t : helpers) t.join();
}

}  // namespace probe_detail
}  // namespace dialtree::eval
