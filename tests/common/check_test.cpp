// common/check: DIALTREE_CHECK and DIALTREE_UNREACHABLE throw InternalError located at the
// caller's file and line, with the condition and the message; the message is built only on
// failure.
#include <gtest/gtest.h>

#include <string>

#include "common/check.h"

namespace dialtree {
namespace {

TEST(Check, PassingCheckDoesNotBuildItsMessage) {
  int built = 0;
  auto message = [&] {
    ++built;
    return std::string("never");
  };
  DIALTREE_CHECK(1 + 1 == 2, message());
  EXPECT_EQ(built, 0);
}

TEST(Check, FailingCheckNamesFileLineConditionAndMessage) {
  const int line = __LINE__ + 2;
  try {
    DIALTREE_CHECK(2 < 1, "ids " + std::to_string(7) + " out of order");
    FAIL() << "no throw";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.file(), "tests/common/check_test.cpp");
    EXPECT_EQ(e.line(), line);
    EXPECT_EQ(std::string(e.what()),
              "internal error at tests/common/check_test.cpp:" + std::to_string(line) +
                  ": check '2 < 1' failed: ids 7 out of order");
  }
  // A std::logic_error, as the invariant failures it replaced.
  EXPECT_THROW(DIALTREE_CHECK(false, ""), std::logic_error);
  try {
    DIALTREE_UNREACHABLE("enum value 9");
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("check 'unreachable' failed: enum value 9"),
              std::string::npos);
  }
  EXPECT_EQ(kExitInternalError, 70);
}

}  // namespace
}  // namespace dialtree
