#include "common/join.h"

namespace dialtree {

std::string join(const std::vector<std::string>& items, std::string_view separator,
                 std::size_t max_shown) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (max_shown > 0 && i == max_shown) {
      return out + ", ... (" + std::to_string(items.size()) + ")";
    }
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

}  // namespace dialtree
