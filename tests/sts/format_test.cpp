// sts/1 JSONL: round trips, the documented record shape, and errors that name the place.
#include <fstream>

#include <gtest/gtest.h>

#include "common/error.h"
#include "sts/format.h"
#include "test_paths.h"

namespace dialtree::sts {
namespace {

Dialog sample() {
  Dialog d{"restaurant8k/train/17", "restaurant8k", {}};
  Turn u{"user", "a table for 4 at 7pm", Tree{}, nullptr};
  u.label->add_value("restaurant", kDefaultIntent, "people", {"4", std::make_pair(12, 13)});
  u.label->add_value("restaurant", kDefaultIntent, "time", {"7pm", std::make_pair(17, 20)});
  u.extra["requested_slots"] = {"people"};
  d.turns.push_back(u);
  d.turns.push_back(Turn{"system", "Booked. Anything else?", std::nullopt, nullptr});
  return d;
}

TEST(StsFormat, RecordShapeIsTheDocumentedOne) {
  EXPECT_EQ(to_json(sample()).dump(),
            R"({"format":"sts/1","id":"restaurant8k/train/17","source":"restaurant8k",)"
            R"("turns":[{"role":"user","text":"a table for 4 at 7pm","label":{"restaurant":)"
            R"({"DEFAULT_INTENT":{"people":[{"value":"4","span":[12,13]}],"time":[{"value":)"
            R"("7pm","span":[17,20]}]}}},"extra":{"requested_slots":["people"]}},)"
            R"({"role":"system","text":"Booked. Anything else?"}]})");
}

TEST(StsFormat, JsonlRoundTrip) {
  testing::TempDir tmp;
  std::vector<Dialog> in = {sample(), sample()};
  in[1].id = "x/1";
  in[1].turns[0].label = Tree{};  // labelled, empty
  write_jsonl(tmp.file("a.jsonl"), in);
  const std::vector<Dialog> out = read_jsonl(tmp.file("a.jsonl"));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, in[0].id);
  EXPECT_EQ(out[0].turns.size(), 2u);
  EXPECT_EQ(out[0].turns[0].label, in[0].turns[0].label);
  EXPECT_FALSE(out[0].turns[1].label.has_value());
  ASSERT_TRUE(out[1].turns[0].label.has_value());
  EXPECT_TRUE(out[1].turns[0].label->empty());
  EXPECT_EQ(out[0].turns[0].extra, in[0].turns[0].extra);
  // Writing what was read gives the same bytes.
  write_jsonl(tmp.file("b.jsonl"), out);
  std::ifstream a(tmp.file("a.jsonl")), b(tmp.file("b.jsonl"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
}

TEST(StsFormat, UnicodeSpansAreCodePointOffsets) {
  Dialog d{"x", "x", {}};
  Turn u{"user", "café at 5", Tree{}, nullptr};
  u.label->add_value("d", "i", "time", {"5", std::make_pair(8, 9)});
  d.turns.push_back(u);
  const Dialog back = dialog_from_json(nlohmann::json::parse(to_json(d).dump()));
  EXPECT_EQ(back.turns[0].label, u.label);
}

struct BadRecord {
  const char* json;
  const char* needle;  // must appear in the error message
};

TEST(StsFormat, MalformedRecordsNameThePlace) {
  const BadRecord cases[] = {
      {R"({"format":"sts/2","id":"a","source":"s","turns":[]})", "unsupported format 'sts/2'"},
      {R"({"format":"sts/1","source":"s","turns":[]})", "field 'id': is missing"},
      {R"({"format":"sts/1","id":"a","source":"s","turns":[{"role":"bot","text":"x"}]})",
       "field 'turns[0].role'"},
      {R"({"format":"sts/1","id":"a","source":"s","turns":[{"role":"user","text":7}]})",
       "must be a string, got integer"},
      {R"({"format":"sts/1","id":"a","source":"s","turns":[{"role":"user","text":"hi",)"
       R"("label":{"d":{"i":{"s":[{"value":"hx","span":[0,2]}]}}}}]})",
       "text[0:2] is 'hi' but the value is 'hx'"},
      {R"({"format":"sts/1","id":"a","source":"s","turns":[{"role":"user","text":"hi",)"
       R"("label":{"d":{"i":{"s":[{"value":"hi","span":[0,9]}]}}}}]})",
       "turns[0].label.d.i.s[0].span"},
      {R"({"format":"sts/1","id":"a","source":"s","turns":[{"role":"user","text":"hi",)"
       R"("label":{"d":{"i":["x"]}}}]})",
       "field 'turns[0].label.d.i': must be an object, got array"},
  };
  for (const auto& c : cases) {
    try {
      dialog_from_json(nlohmann::json::parse(c.json), "f.jsonl", 3);
      ADD_FAILURE() << "no error for " << c.json;
    } catch (const DataError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("f.jsonl: line 3"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
    }
  }
}

TEST(StsFormat, BrokenJsonLineIsNamed) {
  testing::TempDir tmp;
  {
    std::ofstream f(tmp.file("bad.jsonl"));
    f << to_json(sample()).dump() << "\n"
      << R"({"format":"sts/1","id":)"
      << "\n";
  }
  try {
    read_jsonl(tmp.file("bad.jsonl"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl: line 2: invalid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dialtree::sts
