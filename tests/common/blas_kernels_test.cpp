// The BLAS kernel choice (common/blas_kernels.h, docs/performance.md "BLAS kernels"): the
// /proc/cpuinfo parser, the tier tables and the decision on a table of (core name, CPU flags,
// user value) cases, and the run-time inspection of a real OpenBLAS.
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/blas_kernels.h"
#include "common/cpu_features.h"
#include "test_paths.h"

namespace dialtree {
namespace {

using ::testing::HasSubstr;

CpuInfo cpu(const std::string& vendor, std::initializer_list<const char*> flags) {
  CpuInfo c;
  c.vendor = vendor;
  for (const char* f : flags) c.flags.insert(f);
  return c;
}

const CpuInfo kSapphire = cpu("GenuineIntel", {"avx", "avx2", "fma", "avx512f", "avx512bw",
                                               "avx512vl", "avx512dq", "avx512cd", "amx_bf16"});
const CpuInfo kEpycAvx2 = cpu("AuthenticAMD", {"avx", "avx2", "fma"});
const CpuInfo kHaswell = cpu("GenuineIntel", {"avx", "avx2", "fma"});
const CpuInfo kSandy = cpu("GenuineIntel", {"sse3", "avx"});
const CpuInfo kOld = cpu("GenuineIntel", {"sse3"});

TEST(CpuInfo, ParsesTheFirstProcessorBlockOnly) {
  std::ifstream in(dialtree::testing::fixture("cpuinfo/two-cpus.txt"));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  ASSERT_FALSE(text.empty());
  const CpuInfo c = parse_cpuinfo(text);
  EXPECT_EQ(c.vendor, "GenuineIntel");
  EXPECT_EQ(c.model_name, "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(c.family, 6);
  EXPECT_EQ(c.model, 207);
  EXPECT_EQ(c.flags.size(), 15u);
  EXPECT_TRUE(c.has("avx512vl"));
  EXPECT_TRUE(c.has("amx_bf16"));
  EXPECT_FALSE(c.has("avx512"));  // whole words only
  EXPECT_EQ(cpu_kernel_tier(c), KernelTier::Avx512);
}

TEST(CpuInfo, OddTextLeavesDefaults) {
  for (const char* text : {"", "\n\n", "no colon here\n", "flags\t:\n", "model\t: x7\n"}) {
    const CpuInfo c = parse_cpuinfo(text);
    EXPECT_TRUE(c.flags.empty()) << text;
    EXPECT_EQ(c.family, -1) << text;
    EXPECT_EQ(c.model, -1) << text;
    EXPECT_EQ(cpu_kernel_tier(c), KernelTier::Sse) << text;
  }
}

TEST(BlasKernels, CoreNamesAndCpuFlagsMapToTiers) {
  EXPECT_EQ(openblas_core_tier("Prescott"), KernelTier::Sse);
  EXPECT_EQ(openblas_core_tier("Unknown"), KernelTier::Sse);  // OpenBLAS's own fallback
  EXPECT_EQ(openblas_core_tier("Nehalem"), KernelTier::Sse);
  EXPECT_EQ(openblas_core_tier("Sandybridge"), KernelTier::Avx);
  EXPECT_EQ(openblas_core_tier("HASWELL"), KernelTier::Avx2);  // static builds: upper case
  EXPECT_EQ(openblas_core_tier("zen"), KernelTier::Avx2);
  EXPECT_EQ(openblas_core_tier("SkylakeX"), KernelTier::Avx512);
  EXPECT_EQ(openblas_core_tier("Cooperlake"), KernelTier::Avx512);
  EXPECT_EQ(openblas_core_tier("NeoverseN2"), KernelTier::Unknown);
  EXPECT_EQ(openblas_core_tier(""), KernelTier::Unknown);

  EXPECT_EQ(cpu_kernel_tier(kSapphire), KernelTier::Avx512);
  EXPECT_EQ(cpu_kernel_tier(kEpycAvx2), KernelTier::Avx2);
  EXPECT_EQ(cpu_kernel_tier(kSandy), KernelTier::Avx);
  EXPECT_EQ(cpu_kernel_tier(kOld), KernelTier::Sse);
  // AVX-512 without VL (Knights Landing) is not what SkylakeX kernels need; AVX2 without FMA
  // is not Haswell.
  EXPECT_EQ(cpu_kernel_tier(cpu("GenuineIntel", {"avx", "avx2", "fma", "avx512f", "avx512cd"})),
            KernelTier::Avx2);
  EXPECT_EQ(cpu_kernel_tier(cpu("GenuineIntel", {"avx", "avx2"})), KernelTier::Avx);

  EXPECT_EQ(openblas_coretype_for(KernelTier::Avx512, kSapphire), "SkylakeX");
  EXPECT_EQ(openblas_coretype_for(KernelTier::Avx2, kHaswell), "Haswell");
  EXPECT_EQ(openblas_coretype_for(KernelTier::Avx2, kEpycAvx2), "Zen");
  EXPECT_EQ(openblas_coretype_for(KernelTier::Avx, kSandy), "Sandybridge");
  EXPECT_EQ(openblas_coretype_for(KernelTier::Sse, kOld), "");
}

TEST(BlasKernels, Avx512NeedsAvx2sFlagsToo) {
  // A VM that hides AVX2 and FMA but shows AVX-512 gets no AVX-512 kernels: they use both.
  EXPECT_EQ(cpu_kernel_tier(cpu("GenuineIntel", {"avx", "avx512f", "avx512bw", "avx512vl",
                                                 "avx512dq", "avx512cd"})),
            KernelTier::Avx);
  EXPECT_EQ(cpu_kernel_tier(cpu("GenuineIntel", {"avx", "avx2", "avx512f", "avx512bw", "avx512vl",
                                                 "avx512dq", "avx512cd"})),
            KernelTier::Avx);
}

TEST(CpuInfo, CpuidFlagsAreNamedAsProcCpuinfoNamesThem) {
  const CpuInfo& c = cpuid_cpu();
  EXPECT_EQ(&c, &cpuid_cpu());  // read once
  EXPECT_TRUE(c.vendor.empty());
  const std::set<std::string> asked = {"avx",     "avx2",     "fma",      "bmi1",     "bmi2",
                                       "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"};
  for (const std::string& f : c.flags) EXPECT_EQ(asked.count(f), 1u) << f;
#if defined(__x86_64__)
  EXPECT_EQ(c.has("avx2"), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(c.has("bmi1"), __builtin_cpu_supports("bmi") != 0);
  EXPECT_EQ(c.has("avx512vl"), __builtin_cpu_supports("avx512vl") != 0);
#endif
  // Where /proc/cpuinfo is readable, the kernel's flags and the processor's agree, and so do
  // the tiers the BLAS choice and the probe's kernels see.
  if (host_cpu().flags.empty()) GTEST_SKIP() << "/proc/cpuinfo unreadable";
  for (const std::string& f : asked) EXPECT_EQ(c.has(f), host_cpu().has(f)) << f;
  EXPECT_EQ(cpu_kernel_tier(c), cpu_kernel_tier(host_cpu()));
}

TEST(BlasKernels, DecisionTable) {
  struct Case {
    std::optional<std::string> user;
    std::string corename;
    CpuInfo cpu;
    bool set;
    std::string coretype;
    std::string reason_part;
  };
  const Case cases[] = {
      // The measured case: Debian's OpenBLAS 0.3.21 does not know Sapphire Rapids.
      {std::nullopt, "Prescott", kSapphire, true, "SkylakeX", "chose Prescott (SSE)"},
      {std::nullopt, "Haswell", kSapphire, true, "SkylakeX", "on a CPU with AVX-512"},
      {std::nullopt, "Prescott", kEpycAvx2, true, "Zen", "OPENBLAS_CORETYPE=Zen"},
      {std::nullopt, "Nehalem", kHaswell, true, "Haswell", "OPENBLAS_CORETYPE=Haswell"},
      {std::nullopt, "Prescott", kSandy, true, "Sandybridge", "with AVX:"},
      // Already as wide as the CPU allows, or wider: kept.
      {std::nullopt, "SkylakeX", kSapphire, false, "SkylakeX", "as wide as this CPU allows"},
      {std::nullopt, "Cooperlake", kSapphire, false, "Cooperlake", "kept"},
      {std::nullopt, "Zen", kEpycAvx2, false, "Zen", "kept"},
      {std::nullopt, "SkylakeX", kHaswell, false, "SkylakeX", "kept"},
      {std::nullopt, "Prescott", kOld, false, "Prescott", "kept"},
      // A name this table does not know: no decision on it.
      {std::nullopt, "NeoverseN2", kSapphire, false, "NeoverseN2", "does not know"},
      // Not OpenBLAS (reference BLAS, MKL, or none found).
      {std::nullopt, "", kSapphire, false, "", "not OpenBLAS"},
      // The user's value wins, even a narrower one; an empty value counts as unset.
      {std::string("Haswell"), "Prescott", kSapphire, false, "Haswell", "set by the user"},
      {std::string("Prescott"), "SkylakeX", kSapphire, false, "Prescott", "set by the user"},
      {std::string(""), "Prescott", kSapphire, true, "SkylakeX", "chose Prescott"},
  };
  for (const Case& c : cases) {
    const BlasKernelDecision d = decide_openblas_coretype(c.user, c.corename, c.cpu);
    const std::string label = c.corename + " / user " + (c.user ? *c.user : "(unset)");
    EXPECT_EQ(d.set_coretype, c.set) << label;
    EXPECT_EQ(d.coretype, c.coretype) << label;
    EXPECT_THAT(d.reason, HasSubstr(c.reason_part)) << label << ": " << d.reason;
  }
}

TEST(BlasKernels, InspectsARealOpenBlasAndFindsNoneWhereNoneIs) {
  // This test executable links no BLAS.
  EXPECT_TRUE(inspect_loaded_blas().library.empty());
  const BlasRuntime missing = load_and_inspect_blas("libdialtree-no-such-blas.so.3");
  EXPECT_TRUE(missing.library.empty());
  EXPECT_FALSE(missing.openblas);

  const BlasRuntime blas = load_and_inspect_blas();  // libblas.so.3, as LibTorch links it
  if (!blas.openblas) GTEST_SKIP() << "libblas.so.3 is not OpenBLAS here: " << blas.library;
  EXPECT_THAT(blas.library, HasSubstr("libblas.so.3"));
  EXPECT_NE(openblas_core_tier(blas.corename), KernelTier::Unknown) << blas.corename;
  EXPECT_THAT(blas.config, ::testing::StartsWith("OpenBLAS "));
  EXPECT_GE(blas.num_threads, 1);
  EXPECT_THAT(blas.parallel, ::testing::AnyOf("sequential", "pthreads", "OpenMP"));
}

}  // namespace
}  // namespace dialtree
