// Ranges declared beside settings (common/value_range.h): the messages every config reader and
// flag list shares, and exact integer comparison (the tables that use them:
// tests/common/settings_test.cpp).
#include "common/value_range.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace dialtree {
namespace {

TEST(ValueRange, MessagesNameTheRangeTheNoteAndTheValue) {
  EXPECT_EQ(range_problem(0, at_least(1)), "must be >= 1, got 0");
  EXPECT_EQ(range_problem(1, at_least(1)), "");
  EXPECT_EQ(range_problem(70000, between(0, 65535)), "must be in [0, 65535], got 70000");
  EXPECT_EQ(range_problem(-1, between(0, 65535)), "must be in [0, 65535], got -1");
  EXPECT_EQ(range_problem(65535, between(0, 65535)), "");
  EXPECT_EQ(range_problem(-2, at_least(0, "0 = off")), "must be >= 0 (0 = off), got -2");
  EXPECT_EQ(range_problem(5, Range{-std::numeric_limits<double>::infinity(), true, 4}),
            "must be <= 4, got 5");
  // Reals: open and closed ends, the note, NaN never in range.
  EXPECT_EQ(range_problem(0.0, greater_than(0)), "must be > 0.0, got 0.0");
  EXPECT_EQ(range_problem(1e-5, greater_than(0)), "");
  EXPECT_EQ(range_problem(1.0, Range{0, false, 1, false}), "must be in (0.0, 1.0), got 1.0");
  EXPECT_EQ(range_problem(10000.5, between(0, 10000, "ms")),
            "must be in [0.0, 10000.0] (ms), got 10000.5");
  EXPECT_EQ(range_problem(std::numeric_limits<double>::quiet_NaN(), at_least(0)),
            "must be >= 0.0, got nan");
}

TEST(ValueRange, IntegersCompareExactlyWhateverTheirType) {
  // Unsigned values above LLONG_MAX are above every finite bound and fit an unbounded one.
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(range_problem(huge, at_least(1)), "");
  EXPECT_EQ(range_problem(huge, between(1, 4096)),
            "must be in [1, 4096], got 18446744073709551615");
  EXPECT_EQ(range_problem(std::size_t{0}, at_least(1)), "must be >= 1, got 0");
  // A bound of 2^53 + 1 cannot be a double; values next to 2^53 still compare exactly.
  const long long two53 = 1LL << 53;
  EXPECT_EQ(range_problem(two53, between(0, static_cast<double>(two53))), "");
  EXPECT_EQ(range_problem(two53 + 2, between(0, static_cast<double>(two53))),
            "must be in [0, 9007199254740992], got 9007199254740994");
  EXPECT_EQ(range_problem(std::numeric_limits<long long>::min(), at_least(0)),
            "must be >= 0, got -9223372036854775808");
}

TEST(ValueRange, AnEmptyOptionalHasNoProblemAndAFilledOneIsChecked) {
  EXPECT_EQ(range_problem(std::optional<std::int64_t>{}, at_least(1)), "");
  EXPECT_EQ(range_problem(std::optional<std::int64_t>{0}, at_least(1)), "must be >= 1, got 0");
  EXPECT_EQ(range_problem(std::optional<std::int64_t>{-3}, at_least(1)), "must be >= 1, got -3");
}

}  // namespace
}  // namespace dialtree
