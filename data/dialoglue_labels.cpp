#include "data/dialoglue_labels.h"

#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "common/utf8.h"
#include "data/word_input.h"

namespace dialtree::data {

namespace {

void require_same_length(std::size_t a, std::size_t b, const char* what) {
  if (a != b) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(a) + " items but " +
                                std::to_string(b) + " tags");
  }
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::vector<std::string> split_python_whitespace(std::string_view text) {
  std::vector<std::string> out;
  for (WordSpan& w : split_words(text)) out.push_back(std::move(w.text));
  return out;
}

WordTags slot_word_tags(const readers::SlotExample& example) {
  // Step 1: span words -> slot; a later label overwrites an earlier one for the same word.
  std::unordered_map<std::string, std::string> word_slot;
  for (const readers::SlotSpan& span : example.labels) {
    for (std::string& w :
         split_python_whitespace(utf8::substr(example.text, span.start, span.end))) {
      word_slot[std::move(w)] = span.slot;
    }
  }
  // Step 2: prefix the requested slot names one at a time (reverse order in the result).
  std::string text = example.text;
  for (const std::string& r : example.requested_slots) text = r + " " + text;
  // Step 3: exact-string match per word; I- only when the previous word had the same slot.
  WordTags out;
  out.words = split_python_whitespace(text);
  out.tags.reserve(out.words.size());
  const std::string* prev = nullptr;
  for (const std::string& w : out.words) {
    const auto it = word_slot.find(w);
    if (it == word_slot.end()) {
      out.tags.emplace_back("O");
      prev = nullptr;
    } else {
      out.tags.push_back((prev != nullptr && *prev == it->second ? "I-" : "B-") + it->second);
      prev = &it->second;
    }
  }
  return out;
}

std::string continuation_tag(const std::string& tag, const TagSet& vocab) {
  if (starts_with(tag, "B-") || starts_with(tag, "I-")) {
    std::string inside = "I-" + tag.substr(2);
    if (vocab.count(inside) != 0) return inside;
  }
  return tag;
}

PieceTags expand_to_pieces(const std::vector<std::string>& words,
                           const std::vector<std::string>& tags, const Tokenizer& tok,
                           const TagSet& vocab) {
  require_same_length(words.size(), tags.size(), "expand_to_pieces");
  PieceTags out;
  for (std::size_t w = 0; w < words.size(); ++w) {
    const std::vector<std::int32_t> ids = tok.encode(words[w]);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      out.ids.push_back(ids[k]);
      out.tags.push_back(k == 0 ? tags[w] : continuation_tag(tags[w], vocab));
    }
  }
  return out;
}

bool eval_drops_token(const Tokenizer& tok, std::int32_t id) {
  const SpecialTokens& sp = tok.special();
  if (id == sp.pad || id == sp.unk || id == sp.cls || id == sp.sep || id == sp.mask) return true;
  const std::string text = tok.decode({id});
  return text.empty() || text == "user";
}

std::vector<std::string> eval_tag_sequence(const std::vector<std::int32_t>& ids,
                                           const std::vector<std::string>& tags,
                                           const Tokenizer& tok) {
  require_same_length(ids.size(), tags.size(), "eval_tag_sequence");
  std::vector<std::string> out;
  out.reserve(tags.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!eval_drops_token(tok, ids[i])) out.push_back(tags[i]);
  }
  return out;
}

std::vector<TagSpan> tag_spans(const std::vector<std::string>& tags) {
  std::vector<TagSpan> spans;
  bool is_open = false;
  TagSpan open;
  const auto close = [&](std::size_t end) {
    if (is_open) {
      open.end = end;
      spans.push_back(open);
    }
    is_open = false;
  };
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const std::string& t = tags[i];
    if (starts_with(t, "B-")) {
      close(i);
      is_open = true;
      open.label = t.substr(2);
      open.start = i;
    } else if (starts_with(t, "I-")) {
      if (!is_open || t.compare(2, std::string::npos, open.label) != 0) close(i);
    } else {
      close(i);  // "O", "[PAD]" and anything else
    }
  }
  close(tags.size());
  return spans;
}

std::vector<std::string> extract_slot_spans(const std::vector<std::string>& tags) {
  std::vector<std::string> out;
  for (const TagSpan& s : tag_spans(tags)) {
    out.push_back(s.label + ":" + std::to_string(s.start) + "-" + std::to_string(s.end));
  }
  return out;
}

std::vector<std::string> slot_gold_spans(const readers::SlotExample& example, const Tokenizer& tok,
                                         const TagSet& vocab) {
  const WordTags words = slot_word_tags(example);
  const PieceTags pieces = expand_to_pieces(words.words, words.tags, tok, vocab);
  return extract_slot_spans(eval_tag_sequence(pieces.ids, pieces.tags, tok));
}

TopGold top_gold(const readers::TopExample& example, const Tokenizer& tok, const TagSet& vocab) {
  require_same_length(example.words.size(), example.tags.size(), "top_gold");
  std::vector<std::string> words, tags;
  for (std::size_t i = 0; i < example.words.size(); ++i) {
    if (example.words[i] == ":") continue;  // `::TAG`: DialoGLUE reads an empty word
    words.push_back(example.words[i]);
    tags.push_back(example.tags[i]);
  }
  TopGold out;
  out.intent = example.intent;
  out.tags = expand_to_pieces(words, tags, tok, vocab).tags;
  return out;
}

}  // namespace dialtree::data
