// The matrix products of the probe's multinomial logistic regression (eval/logistic.h), which
// take most of a fit: register-blocked AVX2+FMA and AVX-512 kernels, chosen at run time by the
// CPU's kernel tier (common/blas_kernels.h cpu_kernel_tier), and Eigen on other CPUs. Torch-free.
#pragma once

#include <cstddef>

namespace dialtree::eval::probe_detail {

/// The best matrix-product kernel this CPU runs: 4 (AVX-512), 3 (AVX2 + FMA) or 0 (Eigen).
/// The tier is common/blas_kernels.h cpu_kernel_tier() of the running CPU's CPUID flags
/// (common/cpu_features.h cpuid_cpu()), Avx512 -> 4 and Avx2 -> 3, each also needing BMI1 and
/// BMI2 (the kernels are compiled for x86-64-v3 / v4, which include them; OpenBLAS's kernels,
/// and so the tier, do not ask for them). Decided once per process; never throws.
int matmul_level();

/// C = L·R for row-major L [m, q], R [q, p8], C [m, p8] (p8 a multiple of 8) with the kernel of
/// `level`, or the best one below it that the CPU runs. The logistic regression's products.
void matmul_rr(int level, const double* l, std::ptrdiff_t m, std::ptrdiff_t q, const double* r,
               std::ptrdiff_t p8, double* c);

/// matmul_rr() with this CPU's best kernel and the rows of L split over up to `threads` threads.
/// Every element of C sums over q in the same order whatever the split, so the bits do not
/// depend on `threads`; blocks are multiples of 24 rows (the kernels' 4- and 6-row tiles) and at
/// least 96 rows.
void matmul_rr_threads(const double* l, std::ptrdiff_t m, std::ptrdiff_t q, const double* r,
                       std::ptrdiff_t p8, double* c, int threads);

}  // namespace dialtree::eval::probe_detail
