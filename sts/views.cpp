#include "sts/views.h"

namespace dialtree::sts {

const std::array<std::string, kNumViews>& view_names() {
  static const std::array<std::string, kNumViews> names = {"D",  "I",  "S",   "V",   "DI",
                                                           "IS", "SV", "DIS", "ISV", "DISV"};
  return names;
}

const std::vector<std::string>& view_name_list() {
  static const std::vector<std::string> names(view_names().begin(), view_names().end());
  return names;
}

std::optional<std::size_t> find_view(const std::string& name) {
  const auto& names = view_names();
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k] == name) return k;
  }
  return std::nullopt;
}

}  // namespace dialtree::sts
