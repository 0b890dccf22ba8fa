// common/: UTF-8 slicing by code points, atomic writes, JSON access errors (docs/failure-cases.md
// C08).
#include <sys/mman.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/cpu_features.h"
#include "common/error.h"
#include "common/join.h"
#include "common/json_util.h"
#include "common/malloc_info.h"
#include "common/text_distance.h"
#include "common/utf8.h"
#include "expect_error.h"
#include "test_paths.h"

namespace dialtree {
namespace {

TEST(Join, SeparatorAndACapOnTheItemsShown) {
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(join({"a"}), "a");
  EXPECT_EQ(join({"banking", "clinc", "hwu"}), "banking, clinc, hwu");
  EXPECT_EQ(join({"banking", "clinc", "hwu"}, ","), "banking,clinc,hwu");
  // A long list: the first max_shown, then the total count.
  EXPECT_EQ(join({"a", "b", "c", "d"}, ", ", 2), "a, b, ... (4)");
  EXPECT_EQ(join({"a", "b"}, ", ", 2), "a, b");  // all fit: no ellipsis
}

TEST(Utf8, SubstrCountsCodePointsLikePython) {
  const std::string s = "caf\xC3\xA9 \xF0\x9F\x98\x80 ok";  // "café 😀 ok"
  EXPECT_EQ(utf8::length(s), 9u);
  EXPECT_EQ(utf8::substr(s, 0, 4), "caf\xC3\xA9");
  EXPECT_EQ(utf8::substr(s, 5, 6), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8::substr(s, 7, 9), "ok");
  EXPECT_EQ(utf8::substr(s, 9, 9), "");
  EXPECT_EQ(utf8::substr(s, 3, 3), "");
  EXPECT_THROW(utf8::substr(s, 0, 10), std::out_of_range);
  EXPECT_THROW(utf8::substr(s, 5, 4), std::out_of_range);
  EXPECT_EQ(utf8::encode(utf8::decode(s)), s);
  const auto offs = utf8::codepoint_offsets(s);
  ASSERT_EQ(offs.size(), 10u);
  EXPECT_EQ(offs[4], 5u);   // after the 2-byte é
  EXPECT_EQ(offs[6], 10u);  // after the 4-byte emoji
}

TEST(Utf8, RejectsMalformedSequences) {
  EXPECT_TRUE(utf8::is_valid("plain ascii"));
  EXPECT_TRUE(utf8::is_valid("\xE2\x80\x93"));       // en dash
  EXPECT_FALSE(utf8::is_valid("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(utf8::is_valid("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(utf8::is_valid("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_EQ(utf8::first_invalid("ab\xE2\x80"), 2u);  // truncated sequence
  EXPECT_EQ(utf8::first_invalid("ok\xFF"), 2u);
}

TEST(AtomicFile, CommitReplacesAndAbandonLeavesTargetAndNoTemp) {
  testing::TempDir tmp;
  const std::string target = tmp.file("out.txt");
  write_file_atomic(target, "first");
  {
    AtomicFile f(target);
    f.stream() << "second, never committed";
  }  // destroyed without commit
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "first");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  EXPECT_THROW(write_file_atomic(tmp.file("no/such/dir/x"), "x"), std::runtime_error);
}

TEST(JsonUtil, WrongTypesNamePathAndBothTypes) {
  const json j = json::parse(R"({"labels":[{"valueSpan":{"startIndex":"3"}}], "n": 1.5})");
  const JsonPlace place{"train.json", "record 0"};
  const json& span = j["labels"][0]["valueSpan"];
  try {
    json_as_int(json_require(span, "startIndex", place, "labels[0].valueSpan"), place,
                "labels[0].valueSpan.startIndex");
    FAIL();
  } catch (const SchemaError& e) {
    EXPECT_STREQ(e.what(),
                 "train.json: record 0: field 'labels[0].valueSpan.startIndex': must be an "
                 "integer, got string \"3\"");
  }
  try {
    json_require(span, "endIndex", place, "labels[0].valueSpan");
    FAIL();
  } catch (const SchemaError& e) {
    EXPECT_STREQ(e.what(),
                 "train.json: record 0: field 'labels[0].valueSpan.endIndex': is missing");
  }
  EXPECT_THROW(json_as_int(j["n"], place, "n"), SchemaError);
  EXPECT_EQ(json_type_name(j["n"]), "number");
}

TEST(JsonUtil, SyntaxErrorsNameLineAndColumn) {
  testing::TempDir tmp;
  {
    std::ofstream f(tmp.file("bad.json"));
    f << "[\n  {\"a\": 1},\n  {\"a\": }\n]\n";
    std::ofstream g(tmp.file("big.json"));
    g << "[\n  1,\n  1e400]";
    std::ofstream h(tmp.file("big.jsonl"));
    h << "[1]\n[2, -1e400]\n";
  }
  using dialtree::testing::error_of;
  using ::testing::HasSubstr;
  EXPECT_THAT(error_of<DataError>([&] { json_parse_file(tmp.file("bad.json")); }),
              HasSubstr("bad.json: line 3, column"));
  // A number beyond double's range: nlohmann's exception has no place, the error still has one.
  EXPECT_THAT(error_of<DataError>([&] { json_parse_file(tmp.file("big.json")); }),
              HasSubstr("big.json: line 3, column 3: invalid JSON: number overflow"));
  EXPECT_THAT(error_of<DataError>([&] {
                json_for_each_line(tmp.file("big.jsonl"), [](std::size_t, const json&) {});
              }),
              HasSubstr("big.jsonl: line 2: invalid JSON at column 5: number overflow"));
  EXPECT_EQ(json_error_offset("[1e400]"), std::optional<std::size_t>(1));
  EXPECT_EQ(json_error_offset("{\"a\": }"), std::optional<std::size_t>(6));
  EXPECT_EQ(json_error_offset("[1, 2]"), std::nullopt);
  EXPECT_THROW(json_parse_file(tmp.file("missing.json")), DataError);
}

}  // namespace
}  // namespace dialtree

namespace dialtree {
namespace {

TEST(ResidentSet, GrowsByTheBytesTouchedAndShrinksWhenTheyAreFreed) {
  const std::int64_t before = dialtree::resident_set_bytes();
  ASSERT_GT(before, 1 << 20);  // a test binary with gtest and its libraries: at least 1 MiB
  // Pages are mapped and unmapped here directly, not through malloc: what is measured is the
  // function, not an allocator's policy (ASan's quarantine, for one, keeps freed blocks resident).
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  void* mapped = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  std::memset(mapped, 1, kBytes);  // every page written, so every page resident
  const std::int64_t touched = dialtree::resident_set_bytes();
  EXPECT_GE(touched - before, std::int64_t{60} << 20);  // 64 MiB, less what moved meanwhile
  ASSERT_EQ(::munmap(mapped, kBytes), 0);
  EXPECT_LT(dialtree::resident_set_bytes(), touched - (std::int64_t{60} << 20));
}

TEST(CpuFeatures, Bf16IsUsedOnlyWhenRequestedAndNative) {
  std::string note;
  EXPECT_FALSE(effective_bf16(false, &note));
  EXPECT_TRUE(note.empty());
  const bool native = cpu_has_native_bf16();
  EXPECT_EQ(effective_bf16(true, &note), native);
  // The fallback is never silent: a note exists exactly when bf16 was requested but refused.
  EXPECT_EQ(note.empty(), native);
  if (!native) {
    EXPECT_NE(note.find("fp32"), std::string::npos);
  }
  // Agrees with the kernel's own flag list.
  std::ifstream in("/proc/cpuinfo");
  const std::string all((std::istreambuf_iterator<char>(in)), {});
  const bool listed =
      all.find(" avx512_bf16") != std::string::npos || all.find(" amx_bf16") != std::string::npos;
  EXPECT_EQ(native, listed);
}

TEST(TextDistance, EditDistanceAndTheClosestName) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // the textbook example
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  EXPECT_EQ(closest_name("hiden_size", {"vocab_size", "hidden_size", "num_labels"}), "hidden_size");
  // Ties go to the first candidate; no candidates, no suggestion.
  EXPECT_EQ(closest_name("ab", {"ax", "ay"}), "ax");
  EXPECT_EQ(closest_name("anything", {}), "");
  // Nothing close: no suggestion rather than a random key.
  EXPECT_EQ(closest_name("foo", {"bf16", "dropout"}), "");
  EXPECT_EQ(closest_name("epochs", {"dropout", "num_train_epochs"}), "num_train_epochs");
  EXPECT_EQ(suggestion_distance("Hidden_Size", "hidden_size"), std::optional<std::size_t>(0));
  EXPECT_FALSE(suggestion_distance("lr", "bf16").has_value());
}

}  // namespace
}  // namespace dialtree
