// What the CPU can do natively, for choices that would otherwise be silently slow.
#pragma once

#include <string>

namespace dialtree {

/// True if the CPU has native bf16 matrix instructions (x86 `avx512_bf16` or `amx_bf16` in
/// /proc/cpuinfo's flags). Without them LibTorch's CPU bf16 matrix products are emulated and
/// run 30-40x slower than fp32 (measured: 5 vs 174 GFLOP/s on an AVX2-only EPYC VM), so bf16
/// autocast must not be used there. Read once and cached; false when /proc/cpuinfo is
/// unreadable (the cautious answer).
bool cpu_has_native_bf16();

/// The bf16 decision of a run: `requested && cpu_has_native_bf16()`. When bf16 was requested
/// but the CPU lacks it, `*note` (if not null) receives a one-line explanation for the log.
bool effective_bf16(bool requested, std::string* note = nullptr);

}  // namespace dialtree
