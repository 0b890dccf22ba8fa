// The one wording of a tensor's shape in error messages and notes: "[2, 3]", "[]" for a scalar,
// "undefined" for an undefined tensor. A template over anything with defined(), dim() and
// size(i) (at::Tensor), so this header stays torch-free.
#pragma once

#include <cstdint>
#include <string>

namespace dialtree {

/// "[d0, d1, ...]" of `t`, or "undefined" when !t.defined().
template <class Tensor>
std::string shape_text(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = "[";
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(t.size(d));
  }
  return s + "]";
}

}  // namespace dialtree
