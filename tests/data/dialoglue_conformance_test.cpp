// Conformance: DialoGLUE's gold-label rules (docs/dialoglue.md §4, §5) applied to the real test
// splits regenerate the official answer key gt_test.json exactly, with BERT-uncased WordPiece.
#include <cstddef>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/bert_tokenizer.h"
#include "data/dialoglue_labels.h"
#include "data/wordpiece.h"
#include "readers/slot_json.h"
#include "readers/top.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using dialtree::testing::answer_key;
using dialtree::testing::bert;

using dialtree::testing::shared_data;
using nlohmann::json;

std::string join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

// Regenerates gt_test.json[key] from <dir>/test.json + <dir>/vocab.txt; returns #matches.
std::size_t slot_matches(const std::string& dir, const std::string& key, std::size_t* total) {
  const auto examples = readers::read_slot_json(shared_data("dialoglue/" + dir + "/test.json"));
  const auto vocab = readers::read_slot_vocab(shared_data("dialoglue/" + dir + "/vocab.txt"));
  const TagSet tags(vocab.begin(), vocab.end());
  const json& gold = answer_key().at(key);
  EXPECT_EQ(gold.size(), examples.size()) << key;
  *total = examples.size();
  std::size_t matches = 0, shown = 0;
  for (std::size_t i = 0; i < examples.size() && i < gold.size(); ++i) {
    const std::vector<std::string> want = gold[i].get<std::vector<std::string>>();
    const std::vector<std::string> got = slot_gold_spans(examples[i], bert(), tags);
    if (got == want) {
      ++matches;
    } else if (shown++ < 20) {
      std::cout << key << " record " << i << ": text '" << examples[i].text << "'\n  want "
                << join(want) << "\n  got  " << join(got) << "\n";
    }
  }
  return matches;
}

TEST(DialogueConformance, Restaurant8kRegeneratesGtTest) {
  std::size_t total = 0;
  EXPECT_EQ(slot_matches("restaurant8k", "restaurant8k", &total), 3731u);
  EXPECT_EQ(total, 3731u);
}

TEST(DialogueConformance, Dstc8RegeneratesGtTest) {
  std::size_t total = 0;
  EXPECT_EQ(slot_matches("dstc8_sgd", "dstc8", &total), 1813u);
  EXPECT_EQ(total, 1813u);
}

std::vector<readers::TopExample> read_top_split(const std::string& name) {
  return readers::read_top(shared_data("dialoglue/top/" + name + ".txt"));
}

TEST(DialogueConformance, TopRegeneratesGtTest) {
  const auto train = read_top_split("train");
  const auto eval = read_top_split("eval");
  const auto test = read_top_split("test");
  std::vector<readers::TopExample> all = train;
  all.insert(all.end(), eval.begin(), eval.end());
  all.insert(all.end(), test.begin(), test.end());
  const auto vocab = readers::top_tag_vocab(all);
  const TagSet tags(vocab.begin(), vocab.end());

  const json& gold = answer_key().at("top");
  ASSERT_EQ(test.size(), 9042u);
  ASSERT_EQ(gold.size(), test.size());
  std::size_t matches = 0, shown = 0;
  for (std::size_t i = 0; i < test.size(); ++i) {
    const std::string want_intent = gold[i].at(0).get<std::string>();
    const auto want_tags = gold[i].at(1).get<std::vector<std::string>>();
    const TopGold got = top_gold(test[i], bert(), tags);
    if (got.intent == want_intent && got.tags == want_tags) {
      ++matches;
    } else if (shown++ < 20) {
      std::cout << "top line " << test[i].line << ": want " << want_intent << " " << join(want_tags)
                << "\n  got  " << got.intent << " " << join(got.tags) << "\n";
    }
  }
  EXPECT_EQ(matches, 9042u);
}

// The tag set built from train+eval+test equals the shipped vocab.slot (sorted, 653 tags).
TEST(DialogueConformance, TopTagVocabEqualsVocabSlot) {
  std::vector<readers::TopExample> all;
  for (const char* name : {"train", "eval", "test"}) {
    const auto part = read_top_split(name);
    all.insert(all.end(), part.begin(), part.end());
  }
  const auto built = readers::top_tag_vocab(all);
  EXPECT_EQ(built.size(), 653u);
  EXPECT_EQ(built, readers::read_vocab_lines(shared_data("dialoglue/top/vocab.slot")));
}

}  // namespace
}  // namespace dialtree::data
