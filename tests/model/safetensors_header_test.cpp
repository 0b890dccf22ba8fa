// model/safetensors_header: the torch-free safetensors header checks (length prefix, JSON header,
// dtypes, shapes, data_offsets). Torch-free, so the guard build runs it as test_safetensors_header
// (docs/build.md "Guard build"); the torch build runs it in test_model.
#include "model/safetensors_header.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"

namespace dialtree::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// What parse_safetensors_header(text, data_size) throws, or "no error".
std::string header_error(const std::string& text, std::uint64_t data_size) {
  try {
    parse_safetensors_header(text, data_size, "m.safetensors");
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SafetensorsHeader, LengthPrefixIsLittleEndianAndBoundedByTheFile) {
  const std::string prefix("\x10\x00\x00\x00\x00\x00\x00\x00", 8);
  EXPECT_EQ(parse_safetensors_header_length(prefix, 8 + 16, "m"), 16u);
  EXPECT_EQ(parse_safetensors_header_length(prefix, 8 + 100, "m"), 16u);
  EXPECT_THROW(parse_safetensors_header_length(prefix, 8 + 15, "m"), DataError);
  EXPECT_THROW(parse_safetensors_header_length("abc", 3, "m"), DataError);
  // A prefix shorter than 8 bytes is refused even when the claimed file size is larger.
  EXPECT_THROW(parse_safetensors_header_length("abc", 100, "m"), DataError);
  const std::string huge("\x00\x00\x00\x00\x00\x01\x00\x00", 8);  // 2^40
  try {
    parse_safetensors_header_length(huge, 100, "m.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("m.safetensors"), HasSubstr("exceeds the file size")));
  }
}

TEST(SafetensorsHeader, BadJsonIsNamedWithItsPlaceAndNeverEchoedWhole) {
  EXPECT_THAT(header_error(R"({"a": 1e400})", 0),
              AllOf(HasSubstr("m.safetensors"), HasSubstr("header is not valid JSON"),
                    HasSubstr("number overflow"), HasSubstr("(at header byte 6)")));
  EXPECT_THAT(header_error("{\"a\": }", 0), HasSubstr("line 1, column 7"));
  // An unterminated string of a megabyte: nlohmann quotes what it read; the message cuts it.
  const std::string flood = header_error("{\"" + std::string(1 << 20, 'x'), 0);
  EXPECT_THAT(flood, HasSubstr("header is not valid JSON"));
  EXPECT_LT(flood.size(), 2000u);
}

TEST(SafetensorsHeader, ValidHeaderGivesEntriesInOffsetOrderAndMetadata) {
  const SafetensorsHeader h =
      parse_safetensors_header(R"({"__metadata__":{"format":"pt"},)"
                               R"("b":{"dtype":"BF16","shape":[2,1],"data_offsets":[8,12]},)"
                               R"("a":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                               R"("e":{"dtype":"BOOL","shape":[0],"data_offsets":[12,12]}})",
                               12, "m");
  ASSERT_EQ(h.entries.size(), 3u);
  EXPECT_EQ(h.entries[0].name, "a");
  EXPECT_EQ(h.entries[0].dtype, "F64");
  EXPECT_TRUE(h.entries[0].shape.empty());
  EXPECT_EQ(h.entries[1].name, "b");
  EXPECT_EQ(h.entries[1].shape, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(h.entries[1].begin, 8u);
  EXPECT_EQ(h.entries[1].end, 12u);
  EXPECT_EQ(h.entries[2].name, "e");
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(safetensors_element_size("I16"), 2u);
  EXPECT_EQ(safetensors_element_size("F8_E4M3"), 0u);
}

TEST(SafetensorsHeader, InvalidHeadersRaiseErrorsNamingFileAndTensor) {
  EXPECT_THAT(header_error("{\"x\": ", 0), AllOf(HasSubstr("m.safetensors"), HasSubstr("JSON")));
  EXPECT_THAT(header_error("[1, 2]", 0), HasSubstr("must be a JSON object"));
  EXPECT_THAT(header_error(R"({"__metadata__":{"k":1}})", 0), HasSubstr("must be a string"));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"z":1}})", 8),
              AllOf(HasSubstr("tensor 'x'"), HasSubstr("unknown header field")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
              AllOf(HasSubstr("tensor 'x'"), HasSubstr("F8_E4M3")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
              AllOf(HasSubstr("tensor 'x'"), HasSubstr("shape")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
              AllOf(HasSubstr("tensor 'x'"), HasSubstr("needs 12")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
              HasSubstr("begin after end"));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
              AllOf(HasSubstr("tensor 'x'"), HasSubstr("gap")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
              HasSubstr("truncated"));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12),
              AllOf(HasSubstr("tensor 'y'"), HasSubstr("overlap")));
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8),
              HasSubstr("data section"));
  // Shapes whose element count overflows 64 bits.
  EXPECT_THAT(header_error(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],)"
                           R"("data_offsets":[0,0]}})",
                           0),
              HasSubstr("too many"));
}

}  // namespace
}  // namespace dialtree::model
