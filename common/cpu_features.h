// What the CPU can do natively, for choices that would otherwise be silently slow
// (docs/performance.md: bf16 autocast, BLAS kernel choice).
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace dialtree {

/// The facts of /proc/cpuinfo that dialtree's choices depend on, from its first processor
/// block (every CPU of a machine shares them). The flags are the kernel's, so an instruction
/// set the OS does not enable (AVX-512 state off in XCR0) is already absent.
struct CpuInfo {
  std::string vendor;           ///< vendor_id, e.g. "GenuineIntel", "AuthenticAMD"; "" if none
  std::string model_name;       ///< "model name", e.g. "Intel(R) Xeon(R) Processor"
  int family = -1;              ///< "cpu family"; -1 if absent
  int model = -1;               ///< "model"; -1 if absent
  std::set<std::string> flags;  ///< the "flags" words, e.g. "avx2", "avx512f", "amx_bf16"

  /// True if `flag` is among the flags.
  bool has(std::string_view flag) const { return flags.count(std::string(flag)) != 0; }
};

/// Parses the text of /proc/cpuinfo (x86 layout: "key\t: value" lines, blocks separated by a
/// blank line); only the first block is read. Unknown or missing keys leave their defaults;
/// never throws on odd text.
CpuInfo parse_cpuinfo(std::string_view text);

/// This machine's CpuInfo, read once from /proc/cpuinfo and cached; empty (no flags) when the
/// file is unreadable, which makes every choice below take the cautious answer.
const CpuInfo& host_cpu();

/// The running CPU's vector flags as the processor itself reports them (CPUID, with the OS's
/// enabled register state, through the compiler's __builtin_cpu_supports), named as
/// /proc/cpuinfo names them: only avx, avx2, fma, bmi1, bmi2, avx512f, avx512bw, avx512cd,
/// avx512dq and avx512vl are asked for; vendor and model are left empty. For choosing code
/// compiled with target attributes (eval/probe_gemm.h): it does not depend on /proc being
/// readable. Read once and cached; no flags off x86. Never throws.
const CpuInfo& cpuid_cpu();

/// True if the CPU has native bf16 matrix instructions (x86 `avx512_bf16` or `amx_bf16` in
/// /proc/cpuinfo's flags). Without them LibTorch's CPU bf16 matrix products are emulated and
/// run 30-40x slower than fp32 (measured: 5 vs 174 GFLOP/s on an AVX2-only EPYC VM), so bf16
/// autocast must not be used there. False when /proc/cpuinfo is unreadable.
bool cpu_has_native_bf16();

/// The bf16 decision of a run: `requested && cpu_has_native_bf16()`. When bf16 was requested
/// but the CPU lacks it, `*note` (if not null) receives a one-line explanation for the log.
bool effective_bf16(bool requested, std::string* note = nullptr);

}  // namespace dialtree
