// Joining names for messages and listings: one helper for every library (torch-free).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree {

/// `items` joined with `separator` ("a, b, c"); "" for none. With `max_shown` > 0 and more items
/// than that, the first `max_shown` followed by ", ... (N)" with N the total count, for lists
/// too long to print whole (a checkpoint's missing tensors).
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ",
                 std::size_t max_shown = 0);

}  // namespace dialtree
