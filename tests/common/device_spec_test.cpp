#include "common/device_spec.h"

#include <gtest/gtest.h>

namespace dialtree {
namespace {

TEST(DeviceSpec, ParsesTheFourSpellingsAndRoundTrips) {
  struct Case {
    const char* text;
    DeviceSpec::Kind kind;
    std::optional<int> index;
  };
  for (const Case& c :
       {Case{"auto", DeviceSpec::Kind::Auto, std::nullopt},
        Case{"cpu", DeviceSpec::Kind::Cpu, std::nullopt},
        Case{"cuda", DeviceSpec::Kind::Cuda, std::nullopt},
        Case{"cuda:0", DeviceSpec::Kind::Cuda, 0}, Case{"cuda:7", DeviceSpec::Kind::Cuda, 7},
        Case{"cuda:1023", DeviceSpec::Kind::Cuda, 1023}}) {
    const auto spec = parse_device_spec(c.text);
    ASSERT_TRUE(spec.has_value()) << c.text;
    EXPECT_EQ(spec->kind, c.kind) << c.text;
    EXPECT_EQ(spec->index, c.index) << c.text;
    EXPECT_EQ(to_string(*spec), c.text);
    EXPECT_EQ(device_spec_problem(c.text), "");
  }
}

TEST(DeviceSpec, RefusesEverythingElseWithAMessageThatNamesTheSpellings) {
  for (const char* bad :
       {"", "gpu", "CUDA", "Cpu", " cpu", "cpu ", "cuda:", "cuda:-1", "cuda:+1", "cuda:01",
        "cuda:1024", "cuda:99999", "cuda:1x", "cuda0", "mps", "auto:0", "cpu:0"}) {
    EXPECT_FALSE(parse_device_spec(bad).has_value()) << "'" << bad << "'";
    const std::string problem = device_spec_problem(bad);
    EXPECT_EQ(problem, std::string("\"") + bad +
                           "\" is not a device: use auto, cpu, cuda or cuda:N (N = 0, 1, ...)");
  }
}

}  // namespace
}  // namespace dialtree
