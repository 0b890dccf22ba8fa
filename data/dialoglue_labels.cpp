#include "data/dialoglue_labels.h"

#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <utf8proc.h>

#include "common/utf8.h"

namespace dialtree::data {

namespace {

// Python's str.isspace(): general category Zs or bidirectional class WS, B or S.
bool is_python_space(char32_t c) {
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

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
  if (!utf8::is_valid(text)) {
    throw std::invalid_argument("split_python_whitespace: invalid UTF-8");
  }
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  std::size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n =
        utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(&text[i]),
                         static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    const auto len = static_cast<std::size_t>(n);
    if (is_python_space(static_cast<char32_t>(cp))) {
      if (in_word) out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur.append(text.substr(i, len));
      in_word = true;
    }
    i += len;
  }
  if (in_word) out.push_back(std::move(cur));
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

std::vector<std::string> extract_slot_spans(const std::vector<std::string>& tags) {
  std::vector<std::string> spans;
  bool is_open = false;
  std::string slot;  // slot of the open span
  std::size_t start = 0;
  const auto close = [&](std::size_t end) {
    if (is_open) spans.push_back(slot + ":" + std::to_string(start) + "-" + std::to_string(end));
    is_open = false;
  };
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const std::string& t = tags[i];
    if (starts_with(t, "B-")) {
      close(i);
      is_open = true;
      slot = t.substr(2);
      start = i;
    } else if (starts_with(t, "I-")) {
      if (!is_open || t.compare(2, std::string::npos, slot) != 0) close(i);
    } else {
      close(i);  // "O", "[PAD]" and anything else
    }
  }
  close(tags.size());
  return spans;
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
