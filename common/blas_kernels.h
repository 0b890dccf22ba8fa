// Which BLAS kernels run, and the start-up choice that makes OpenBLAS use the ones the CPU
// supports (docs/performance.md, "BLAS kernels"). Torch-free: the `dialtree` launcher decides
// before LibTorch (and with it OpenBLAS) is loaded into the process that does the work.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/cpu_features.h"

namespace dialtree {

/// The widest vector instruction set a kernel set uses (or a CPU offers), in increasing order.
/// `Unknown` is a name this table does not know: no decision is based on it.
enum class KernelTier { Unknown = 0, Sse = 1, Avx = 2, Avx2 = 3, Avx512 = 4 };

/// "SSE", "AVX", "AVX2", "AVX-512" or "unknown".
std::string_view to_string(KernelTier tier);

/// The tier of an OpenBLAS core name as `openblas_get_corename()` prints it ("Prescott",
/// "Haswell", "SkylakeX", ...; compared case-insensitively, since static builds print upper
/// case). OpenBLAS's own fallback "Unknown" is Sse; a name not in the table is Unknown.
KernelTier openblas_core_tier(std::string_view corename);

/// The widest tier `cpu`'s flags support: Avx2 needs avx2 and fma, Avx512 needs Avx2's flags and
/// avx512f, bw, vl, dq and cd (what OpenBLAS's SkylakeX kernels use; every CPU with those has
/// AVX2 and FMA), Avx needs avx; else Sse. The one tier decision: the BLAS kernel choice below
/// and the probe's matrix kernels (eval/probe_gemm.h, on cpuid_cpu()) both use it.
KernelTier cpu_kernel_tier(const CpuInfo& cpu);

/// The OPENBLAS_CORETYPE value for a tier on `cpu`: "SkylakeX", "Haswell" (or "Zen" on AMD and
/// Hygon), "Sandybridge"; "" for Sse and Unknown (nothing better to ask for).
std::string openblas_coretype_for(KernelTier tier, const CpuInfo& cpu);

/// What to do about OpenBLAS's kernels before loading it for real.
struct BlasKernelDecision {
  bool set_coretype = false;  ///< true: export OPENBLAS_CORETYPE=`coretype` first
  std::string coretype;       ///< the value to export (set_coretype) or the one in use
  std::string reason;         ///< one line for logs and `dialtree version --verbose`
};

/// The decision table (docs/performance.md, "BLAS kernels"):
///   - `user_coretype` set and non-empty: kept, whatever it is (the user's value wins);
///   - `blas_corename` empty (the BLAS is not OpenBLAS, or was not found): nothing to do;
///   - the core OpenBLAS chose is of a known tier below cpu_kernel_tier(cpu): set the coretype
///     of the CPU's tier;
///   - otherwise (as good as the CPU, or a core name this table does not know): keep.
/// Pure; never throws.
BlasKernelDecision decide_openblas_coretype(const std::optional<std::string>& user_coretype,
                                            std::string_view blas_corename, const CpuInfo& cpu);

/// The BLAS a process uses, as found at run time.
struct BlasRuntime {
  std::string library;    ///< resolved path of the shared object serving sgemm_; "" if none
  bool openblas = false;  ///< it exports openblas_get_corename
  std::string corename;   ///< openblas_get_corename(): the kernel set in use ("" if not OpenBLAS)
  std::string config;     ///< openblas_get_config(): version and build options
  /// Threads a BLAS call from this thread uses: openblas_get_num_threads(), except for the
  /// OpenMP build, which follows omp_get_max_threads() at each call (LibTorch's thread count)
  /// while openblas_get_num_threads() keeps its first pool size; -1 if not OpenBLAS.
  int num_threads = -1;
  std::string parallel;  ///< "sequential", "pthreads" or "OpenMP" (openblas_get_parallel())
};

/// Inspects the BLAS already loaded into this process (e.g. by LibTorch), through the dynamic
/// linker's global scope; an empty BlasRuntime when no sgemm_ is loaded. Never throws.
BlasRuntime inspect_loaded_blas();

/// Loads `soname` (default: libblas.so.3, the name LibTorch links) privately and inspects it;
/// for the launcher, which then exec()s the process that does the work. An empty BlasRuntime
/// if it cannot be loaded. Never throws.
BlasRuntime load_and_inspect_blas(const char* soname = "libblas.so.3");

/// The environment variable through which the launcher passes its decision's reason to the
/// process it starts, so that process can log and report it. Set means "decided": nothing
/// re-decides or re-executes after that.
inline constexpr const char* kBlasDecisionEnv = "DIALTREE_BLAS_KERNELS";

/// The one decision step both start-up paths share: unless DIALTREE_BLAS_KERNELS is set (then
/// nullopt: decided upstream), decides from the user's OPENBLAS_CORETYPE and, only when that is
/// unset, `corename()` (the BLAS's own core); exports the reason in DIALTREE_BLAS_KERNELS and,
/// when the kernels should change, OPENBLAS_CORETYPE. Returns the decision.
std::optional<BlasKernelDecision> choose_blas_kernels(const std::function<std::string()>& corename);

/// The same choice for a process that has already loaded its BLAS (one linked with LibTorch,
/// started without the launcher: dialtree-torch run directly, the benchmarks). Unless
/// DIALTREE_BLAS_KERNELS is set, decides from the loaded OpenBLAS's core name and the user's
/// OPENBLAS_CORETYPE; exports the reason, and when the kernels should change exports
/// OPENBLAS_CORETYPE and exec()s /proc/self/exe with `argv` (OpenBLAS reads the variable only
/// when it loads). The re-executed process finds the reason set and goes on: at most one exec.
/// Returns when no exec was needed, or when it failed (then running on, with the kernels it
/// has, and the reason saying so). `argv` is main()'s, null-terminated.
void ensure_blas_kernels(char** argv);

}  // namespace dialtree
