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

}  // namespace dialtree::sts
