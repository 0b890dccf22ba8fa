#include "common/cpu_features.h"

#include <fstream>
#include <sstream>

namespace dialtree {

bool cpu_has_native_bf16() {
  static const bool has = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("flags", 0) != 0) continue;
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) {
        if (w == "avx512_bf16" || w == "amx_bf16") return true;
      }
      return false;  // the first CPU's flags speak for all
    }
    return false;
  }();
  return has;
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
