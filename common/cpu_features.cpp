#include "common/cpu_features.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace dialtree {

namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

int to_int(std::string_view s) {
  const std::string v(s);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  return (v.empty() || *end != '\0') ? -1 : static_cast<int>(n);
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  bool in_block = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (trim(line).empty()) {
      if (in_block) break;  // the first processor block speaks for all
      continue;
    }
    in_block = true;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "vendor_id") {
      info.vendor = std::string(value);
    } else if (key == "model name") {
      info.model_name = std::string(value);
    } else if (key == "cpu family") {
      info.family = to_int(value);
    } else if (key == "model") {
      info.model = to_int(value);
    } else if (key == "flags") {
      std::istringstream words{std::string(value)};
      for (std::string w; words >> w;) info.flags.insert(w);
    }
  }
  return info;
}

const CpuInfo& host_cpu() {
  static const CpuInfo info = [] {
    std::ifstream in("/proc/cpuinfo");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_cpuinfo(text.str());
  }();
  return info;
}

const CpuInfo& cpuid_cpu() {
  static const CpuInfo info = [] {
    CpuInfo c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();  // in case this runs before the compiler's own start-up code
    // Feature by feature: clang 14 (the guard builds) knows no "x86-64-vN" names here, nor
    // "f16c". The names are /proc/cpuinfo's ("bmi" is its "bmi1").
    const std::pair<const char*, bool> flags[] = {
        {"avx", __builtin_cpu_supports("avx")},
        {"avx2", __builtin_cpu_supports("avx2")},
        {"fma", __builtin_cpu_supports("fma")},
        {"bmi1", __builtin_cpu_supports("bmi")},
        {"bmi2", __builtin_cpu_supports("bmi2")},
        {"avx512f", __builtin_cpu_supports("avx512f")},
        {"avx512bw", __builtin_cpu_supports("avx512bw")},
        {"avx512cd", __builtin_cpu_supports("avx512cd")},
        {"avx512dq", __builtin_cpu_supports("avx512dq")},
        {"avx512vl", __builtin_cpu_supports("avx512vl")},
    };
    for (const auto& [name, supported] : flags) {
      if (supported) c.flags.insert(name);
    }
#endif
    return c;
  }();
  return info;
}

bool cpu_has_native_bf16() {
  return host_cpu().has("avx512_bf16") || host_cpu().has("amx_bf16");
}

bool effective_bf16(bool requested, std::string* note) {
  if (!requested) return false;
  if (cpu_has_native_bf16()) return true;
  if (note != nullptr) {
    *note =
        "bf16 requested, but this CPU has no native bf16 matrix instructions (avx512_bf16 / "
        "amx_bf16 in /proc/cpuinfo): running in fp32, since emulated bf16 matrix products are "
        "30-40x slower here";
  }
  return false;
}

}  // namespace dialtree
