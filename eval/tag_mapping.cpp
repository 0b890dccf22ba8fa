#include "eval/tag_mapping.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "data/wordpiece.h"
#include "eval/submission.h"

namespace dialtree::eval {

TagMapper::TagMapper(const std::string& data_dir, const TaggingTask& task)
    : top_(task.name == "top"),
      wordpiece_(std::make_unique<data::WordPieceTokenizer>(
          (std::filesystem::path(data_dir) / "bert-base-uncased-vocab.txt").string())),
      vocab_(task.tag_labels.begin(), task.tag_labels.end()) {}

SpanList TagMapper::slot_spans(const std::vector<std::string>& words,
                               const std::vector<std::string>& tags) const {
  const data::PieceTags pieces = data::expand_to_pieces(words, tags, *wordpiece_, vocab_);
  return data::extract_slot_spans(data::eval_tag_sequence(pieces.ids, pieces.tags, *wordpiece_));
}

TopParse TagMapper::top_parse(const std::vector<std::string>& words,
                              const std::vector<std::string>& tags,
                              const std::string& intent) const {
  if (words.size() != tags.size()) {
    throw std::invalid_argument("top_parse: " + std::to_string(words.size()) + " words but " +
                                std::to_string(tags.size()) + " tags");
  }
  std::vector<std::string> kept_words, kept_tags;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == ":") continue;  // `::TAG`: DialoGLUE's loader reads an empty word
    kept_words.push_back(words[i]);
    kept_tags.push_back(tags[i]);
  }
  return {intent, data::expand_to_pieces(kept_words, kept_tags, *wordpiece_, vocab_).tags};
}

nlohmann::json TagMapper::submission(const std::vector<TaggingExample>& examples,
                                     const std::vector<std::vector<std::string>>& word_tags,
                                     const std::vector<std::string>& intents) const {
  if (word_tags.size() != examples.size() || (top_ && intents.size() != examples.size())) {
    throw std::invalid_argument("submission: " + std::to_string(examples.size()) +
                                " examples but " + std::to_string(word_tags.size()) +
                                " tag lists and " + std::to_string(intents.size()) + " intents");
  }
  if (top_) {
    std::vector<TopParse> parses;
    parses.reserve(examples.size());
    for (std::size_t i = 0; i < examples.size(); ++i) {
      parses.push_back(top_parse(examples[i].words, word_tags[i], intents[i]));
    }
    return top_submission_json(parses);
  }
  std::vector<SpanList> spans;
  spans.reserve(examples.size());
  for (std::size_t i = 0; i < examples.size(); ++i) {
    spans.push_back(slot_spans(examples[i].words, word_tags[i]));
  }
  return slot_submission_json(spans);
}

nlohmann::json TagMapper::gold_submission(const std::vector<TaggingExample>& examples) const {
  std::vector<std::vector<std::string>> tags;
  std::vector<std::string> intents;
  for (const auto& ex : examples) {
    tags.push_back(ex.tags);
    intents.push_back(ex.intent);
  }
  return submission(examples, tags, intents);
}

void write_word_tags_jsonl(const std::string& path, const std::vector<TaggingExample>& examples,
                           bool with_intent) {
  std::string out;
  for (const auto& ex : examples) {
    json j = {{"words", ex.words}, {"tags", ex.tags}};
    if (with_intent) j["intent"] = ex.intent;
    out += j.dump() + "\n";
  }
  write_file_atomic(path, out);
}

void read_word_tags_jsonl(const std::string& path, const TaggingTask& task,
                          const std::vector<TaggingExample>& examples,
                          std::vector<std::vector<std::string>>& tags,
                          std::vector<std::string>& intents) {
  const bool with_intent = !task.intent_labels.empty();
  const std::set<std::string> tag_set(task.tag_labels.begin(), task.tag_labels.end());
  const std::set<std::string> intent_set(task.intent_labels.begin(), task.intent_labels.end());
  tags.clear();
  intents.clear();
  json_for_each_line(path, [&](std::size_t line, const json& j) {
    const JsonPlace place{path, "line " + std::to_string(line)};
    const std::size_t k = tags.size();
    if (k >= examples.size()) {
      throw DataError(path, place.where, "",
                      "more lines than the split's " + std::to_string(examples.size()) +
                          " examples");
    }
    const json& list = json_as_array(json_require(j, "tags", place, ""), place, "tags");
    if (list.size() != examples[k].words.size()) {
      throw DataError(path, place.where, "tags",
                      std::to_string(list.size()) + " tags for the example's " +
                          std::to_string(examples[k].words.size()) + " words");
    }
    tags.emplace_back();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string field = json_index_path("tags", i);
      tags.back().push_back(json_as_string(list[i], place, field));
      if (!tag_set.count(tags.back().back())) {
        throw DataError(path, place.where, field,
                        "tag '" + tags.back().back() + "' is not in " + task.name +
                            "'s tag vocabulary (e.g. '" + task.tag_labels.back() +
                            "'), so it could never be right");
      }
    }
    if (with_intent) {
      intents.push_back(json_as_string(json_require(j, "intent", place, ""), place, "intent"));
      if (!intent_set.count(intents.back())) {
        throw DataError(path, place.where, "intent",
                        "intent '" + intents.back() + "' is not in vocab.intent, so it could "
                        "never be right");
      }
    }
  });
  if (tags.size() != examples.size()) {
    throw DataError(path, "", "",
                    std::to_string(tags.size()) + " lines for the split's " +
                        std::to_string(examples.size()) + " examples");
  }
}

}  // namespace dialtree::eval
