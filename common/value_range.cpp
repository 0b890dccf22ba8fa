// Range checks and their messages (value_range.h).
#include "common/value_range.h"

#include "common/strict_yaml.h"

namespace dialtree {

std::string integer_range_text(long long lo, long long hi, const std::string& note) {
  std::string range;
  if (hi == LLONG_MAX) {
    range = ">= " + std::to_string(lo);
  } else if (lo == LLONG_MIN) {
    range = "<= " + std::to_string(hi);
  } else {
    range = "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  }
  return note.empty() ? range : range + " (" + note + ")";
}

std::string integer_range_problem(long long v, long long lo, long long hi,
                                  const std::string& note) {
  if (v >= lo && v <= hi) return {};
  return "must be " + integer_range_text(lo, hi, note) + ", got " + std::to_string(v);
}

std::string real_range_text(double lo, bool lo_closed, double hi, bool hi_closed,
                            const std::string& note) {
  using strict_yaml::format_real;
  std::string range;
  if (std::isinf(hi)) {
    range = std::string(lo_closed ? ">= " : "> ") + format_real(lo);
  } else if (std::isinf(lo)) {
    range = std::string(hi_closed ? "<= " : "< ") + format_real(hi);
  } else {
    range = std::string("in ") + (lo_closed ? "[" : "(") + format_real(lo) + ", " +
            format_real(hi) + (hi_closed ? "]" : ")");
  }
  return note.empty() ? range : range + " (" + note + ")";
}

std::string real_range_problem(double v, double lo, bool lo_closed, double hi, bool hi_closed,
                               const std::string& note) {
  const bool ok = (lo_closed ? v >= lo : v > lo) && (hi_closed ? v <= hi : v < hi);
  if (ok) return {};
  return "must be " + real_range_text(lo, lo_closed, hi, hi_closed, note) + ", got " +
         strict_yaml::format_real(v);
}

}  // namespace dialtree
