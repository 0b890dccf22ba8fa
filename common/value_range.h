// The allowed values of a numeric setting, declared beside the setting in its row of a settings
// table (common/settings.h): the trainer config, the fine-tuning recipe, a bundle's config.json and
// the flags of `serve` and `embed` all state ranges this way and word their errors the same ("must
// be >= 1, got 0"; docs/training.md "Config", docs/serving.md "Settings"). Torch-free and
// yaml-free, so option headers can include it.
#pragma once

#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace dialtree {

/// A range of numbers: `lo` and `hi` with open or closed ends (±infinity = unbounded) and a note
/// shown after the range in errors ("0 = off"). Integer settings use both ends as closed bounds.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_closed = true;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_closed = true;
  const char* note = "";
};

/// [lo, +inf): "must be >= lo".
constexpr Range at_least(double lo, const char* note = "") {
  return {lo, true, std::numeric_limits<double>::infinity(), true, note};
}
/// (lo, +inf): "must be > lo".
constexpr Range greater_than(double lo, const char* note = "") {
  return {lo, false, std::numeric_limits<double>::infinity(), true, note};
}
/// [lo, hi]: "must be in [lo, hi]".
constexpr Range between(double lo, double hi, const char* note = "") {
  return {lo, true, hi, true, note};
}

/// "in [lo, hi]", ">= lo" (hi is LLONG_MAX) or "<= hi" (lo is LLONG_MIN), then " (note)" when
/// `note` is not empty: the range part of integer_range_problem's message.
std::string integer_range_text(long long lo, long long hi, const std::string& note = {});

/// "" when lo <= v <= hi, else "must be in [lo, hi], got v" (">= lo" when hi is LLONG_MAX,
/// "<= hi" when lo is LLONG_MIN). `note` goes in brackets after the range.
std::string integer_range_problem(long long v, long long lo, long long hi,
                                  const std::string& note = {});

/// "in (lo, hi]" with the brackets the bounds ask for ("> lo" / ">= lo" with an infinite hi,
/// "< hi" / "<= hi" with an infinite lo), then " (note)" when `note` is not empty: the range part
/// of real_range_problem's message.
std::string real_range_text(double lo, bool lo_closed, double hi, bool hi_closed,
                            const std::string& note = {});

/// "" when v is in the interval, else "must be in (lo, hi], got v" with the brackets the bounds
/// ask for ("> lo" / ">= lo" with an infinite hi, "< hi" / "<= hi" with an infinite lo), and
/// `note` in brackets after the range. NaN is never in range.
std::string real_range_problem(double v, double lo, bool lo_closed, double hi, bool hi_closed,
                               const std::string& note = {});

/// "" when `v` lies in `r`, else the message of integer_range_problem / real_range_problem.
/// Integers are compared exactly (infinite bounds become LLONG_MIN / LLONG_MAX, and an unsigned
/// value above LLONG_MAX lies above every finite bound). An empty optional has no problem.
template <class T>
std::string range_problem(const T& v, const Range& r) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const auto bound = [](double b) {
      if (b <= static_cast<double>(LLONG_MIN)) return LLONG_MIN;
      if (b >= static_cast<double>(LLONG_MAX)) return LLONG_MAX;
      return std::llround(b);
    };
    const long long lo = bound(r.lo);
    const long long hi = bound(r.hi);
    if constexpr (std::is_unsigned_v<T>) {
      if (v > static_cast<unsigned long long>(LLONG_MAX)) {  // above every finite bound
        if (hi == LLONG_MAX) return {};
        return "must be " + integer_range_text(lo, hi, r.note) + ", got " + std::to_string(v);
      }
    }
    return integer_range_problem(static_cast<long long>(v), lo, hi, r.note);
  } else if constexpr (std::is_floating_point_v<T>) {
    return real_range_problem(static_cast<double>(v), r.lo, r.lo_closed, r.hi, r.hi_closed, r.note);
  } else {
    static_assert(std::is_same_v<T, std::optional<typename T::value_type>>,
                  "range_problem: a number or an optional number");
    return v ? range_problem(*v, r) : std::string();
  }
}

}  // namespace dialtree
