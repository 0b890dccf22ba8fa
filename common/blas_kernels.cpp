#include "common/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <utility>

// AddressSanitizer builds (docs/build.md "Guard build"): GCC says so with __SANITIZE_ADDRESS__,
// clang 14 only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define DIALTREE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DIALTREE_LSAN 1
#endif
#endif
#ifdef DIALTREE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace dialtree {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// OpenBLAS's x86-64 core names (driver/others/dynamic.c) by the widest instructions their
// single-precision GEMM kernels use.
constexpr std::pair<const char*, KernelTier> kOpenBlasCores[] = {
    {"Unknown", KernelTier::Sse},
    {"Katmai", KernelTier::Sse},
    {"Coppermine", KernelTier::Sse},
    {"Northwood", KernelTier::Sse},
    {"Prescott", KernelTier::Sse},
    {"Banias", KernelTier::Sse},
    {"Atom", KernelTier::Sse},
    {"Core2", KernelTier::Sse},
    {"Penryn", KernelTier::Sse},
    {"Dunnington", KernelTier::Sse},
    {"Nehalem", KernelTier::Sse},
    {"Athlon", KernelTier::Sse},
    {"Opteron", KernelTier::Sse},
    {"Opteron_SSE3", KernelTier::Sse},
    {"Barcelona", KernelTier::Sse},
    {"Nano", KernelTier::Sse},
    {"Bobcat", KernelTier::Sse},
    {"Sandybridge", KernelTier::Avx},
    {"Bulldozer", KernelTier::Avx},
    {"Piledriver", KernelTier::Avx},
    {"Steamroller", KernelTier::Avx},
    {"Excavator", KernelTier::Avx2},
    {"Haswell", KernelTier::Avx2},
    {"Zen", KernelTier::Avx2},
    {"SkylakeX", KernelTier::Avx512},
    {"Cooperlake", KernelTier::Avx512},
    {"SapphireRapids", KernelTier::Avx512},
};

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

std::string real_path(const char* path) {
  char buf[PATH_MAX];
  return realpath(path, buf) != nullptr ? std::string(buf) : std::string(path);
}

// Fills `out` from the library at `handle`; `library` names the file.
BlasRuntime inspect(void* handle) {
  BlasRuntime out;
  void* sgemm = dlsym(handle, "sgemm_");
  if (sgemm == nullptr) return out;
  Dl_info info{};
  if (dladdr(sgemm, &info) != 0 && info.dli_fname != nullptr)
    out.library = real_path(info.dli_fname);
  // Ask the library that serves sgemm_, not whichever OpenBLAS comes first in the scope.
  void* own = out.library.empty() ? nullptr : dlopen(out.library.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  void* from = own != nullptr ? own : handle;
  const auto corename = symbol<char* (*)()>(from, "openblas_get_corename");
  if (corename != nullptr) {
    out.openblas = true;
    if (const char* c = corename()) out.corename = c;
    if (const auto config = symbol<char* (*)()>(from, "openblas_get_config")) {
      if (const char* c = config()) out.config = c;
    }
    if (const auto threads = symbol<int (*)()>(from, "openblas_get_num_threads")) {
      out.num_threads = threads();
    }
    if (const auto parallel = symbol<int (*)()>(from, "openblas_get_parallel")) {
      const int p = parallel();
      out.parallel = p == 0 ? "sequential" : p == 1 ? "pthreads" : p == 2 ? "OpenMP" : "unknown";
    }
    if (out.parallel == "OpenMP") {
      // The OpenMP build sizes each call by omp_get_max_threads() (OpenBLAS's num_cpu_avail):
      // the number LibTorch's at::set_num_threads set, not the pool size reported above.
      if (const auto omp = symbol<int (*)()>(from, "omp_get_max_threads")) {
        out.num_threads = omp();
      }
    }
  }
  if (own != nullptr) dlclose(own);
  return out;
}

}  // namespace

std::string_view to_string(KernelTier tier) {
  switch (tier) {
    case KernelTier::Sse:
      return "SSE";
    case KernelTier::Avx:
      return "AVX";
    case KernelTier::Avx2:
      return "AVX2";
    case KernelTier::Avx512:
      return "AVX-512";
    case KernelTier::Unknown:
      break;
  }
  return "unknown";
}

KernelTier openblas_core_tier(std::string_view corename) {
  for (const auto& [name, tier] : kOpenBlasCores) {
    if (iequals(corename, name)) return tier;
  }
  return KernelTier::Unknown;
}

KernelTier cpu_kernel_tier(const CpuInfo& cpu) {
  const bool avx2 = cpu.has("avx2") && cpu.has("fma");
  if (avx2 && cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl") &&
      cpu.has("avx512dq") && cpu.has("avx512cd")) {
    return KernelTier::Avx512;
  }
  if (avx2) return KernelTier::Avx2;
  if (cpu.has("avx")) return KernelTier::Avx;
  return KernelTier::Sse;
}

std::string openblas_coretype_for(KernelTier tier, const CpuInfo& cpu) {
  switch (tier) {
    case KernelTier::Avx512:
      return "SkylakeX";
    case KernelTier::Avx2:
      return (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") ? "Zen" : "Haswell";
    case KernelTier::Avx:
      return "Sandybridge";
    case KernelTier::Sse:
    case KernelTier::Unknown:
      break;
  }
  return "";
}

BlasKernelDecision decide_openblas_coretype(const std::optional<std::string>& user_coretype,
                                            std::string_view blas_corename, const CpuInfo& cpu) {
  BlasKernelDecision d;
  if (user_coretype && !user_coretype->empty()) {
    d.coretype = *user_coretype;
    d.reason = "OPENBLAS_CORETYPE=" + *user_coretype + " set by the user: kept";
    return d;
  }
  if (blas_corename.empty()) {
    d.reason = "the BLAS is not OpenBLAS (or was not found): its kernels are its own choice";
    return d;
  }
  const std::string chosen(blas_corename);
  const KernelTier have = openblas_core_tier(chosen);
  const KernelTier can = cpu_kernel_tier(cpu);
  d.coretype = chosen;
  if (have == KernelTier::Unknown) {
    d.reason = "OpenBLAS chose " + chosen + ", a core this table does not know: kept";
    return d;
  }
  if (have >= can) {
    d.reason = "OpenBLAS chose " + chosen + " (" + std::string(to_string(have)) +
               "), as wide as this CPU allows: kept";
    return d;
  }
  d.set_coretype = true;
  d.coretype = openblas_coretype_for(can, cpu);
  d.reason = "OpenBLAS chose " + chosen + " (" + std::string(to_string(have)) + ") on a CPU with " +
             std::string(to_string(can)) + ": running with OPENBLAS_CORETYPE=" + d.coretype +
             " (set OPENBLAS_CORETYPE yourself to override)";
  return d;
}

BlasRuntime inspect_loaded_blas() {
  return inspect(RTLD_DEFAULT);
}

std::optional<BlasKernelDecision> choose_blas_kernels(
    const std::function<std::string()>& corename) {
  if (std::getenv(kBlasDecisionEnv) != nullptr) return std::nullopt;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  std::optional<std::string> user_value;
  if (user != nullptr && *user != '\0') user_value = user;  // then no need to ask the BLAS
  const BlasKernelDecision d =
      decide_openblas_coretype(user_value, user_value ? std::string() : corename(), host_cpu());
  if (d.set_coretype) ::setenv("OPENBLAS_CORETYPE", d.coretype.c_str(), 1);
  ::setenv(kBlasDecisionEnv, d.reason.c_str(), 1);
  return d;
}

void ensure_blas_kernels(char** argv) {
  const auto d = choose_blas_kernels([] { return inspect_loaded_blas().corename; });
  if (!d || !d->set_coretype) return;
  ::execv("/proc/self/exe", argv);
  // Still here: the exec failed. Run on with the kernels already loaded, and say so.
  ::unsetenv("OPENBLAS_CORETYPE");
  ::setenv(kBlasDecisionEnv, (d->reason + " [re-exec failed: OpenBLAS's own choice kept]").c_str(),
           1);
}

BlasRuntime load_and_inspect_blas(const char* soname) {
#ifdef DIALTREE_LSAN
  // What the library allocates while loading and never frees (the OpenMP OpenBLAS: 8 bytes) is
  // not dialtree's leak, and once it is dlclose()d LeakSanitizer cannot even name the library.
  __lsan::ScopedDisabler library_allocations;
#endif
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return {};
  BlasRuntime out = inspect(handle);
  dlclose(handle);
  return out;
}

}  // namespace dialtree
