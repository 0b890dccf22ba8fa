#include "readers/top.h"

#include <set>
#include <string_view>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr std::string_view kSep = " <=> ";

/// Calls fn(line_no, line) for each physical line of `bytes` (LF split, trailing CR removed,
/// one leading BOM dropped). A final LF does not start another line.
template <typename Fn>
void for_each_line(std::string_view bytes, Fn&& fn) {
  if (bytes.substr(0, kBom.size()) == kBom) bytes.remove_prefix(kBom.size());
  std::size_t no = 0;
  while (!bytes.empty()) {
    ++no;
    std::size_t nl = bytes.find('\n');
    std::string_view line = bytes.substr(0, nl);
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(no, line);
  }
}

void check_utf8(const std::string& path, std::size_t no, std::string_view line) {
  std::size_t bad = utf8::first_invalid(line);
  if (bad != std::string_view::npos) {
    throw DataError(path, at_line(no), "",
                    "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line");
  }
}

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t") == std::string_view::npos;
}

bool valid_tag(std::string_view tag) {
  if (tag == "O") return true;
  return tag.size() > 2 && (tag[0] == 'B' || tag[0] == 'I') && tag[1] == '-' &&
         tag.find_first_of(" \t:") == std::string_view::npos;
}

}  // namespace

std::vector<TopExample> read_top(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  std::vector<TopExample> out;
  for_each_line(bytes, [&](std::size_t no, std::string_view line) {
    check_utf8(path, no, line);
    if (is_blank(line)) throw DataError(path, at_line(no), "", "empty line");
    std::size_t sep = line.find(kSep);
    if (sep == std::string_view::npos) {
      throw DataError(path, at_line(no), "",
                      "missing ' <=> ' between the tagged words and the intent");
    }
    if (line.find(kSep, sep + 1) != std::string_view::npos) {
      throw DataError(path, at_line(no), "", "more than one ' <=> '");
    }
    TopExample ex;
    ex.line = no;
    std::string_view intent = line.substr(sep + kSep.size());
    while (!intent.empty() && (intent.back() == ' ' || intent.back() == '\t')) {
      intent.remove_suffix(1);
    }
    if (intent.empty()) throw DataError(path, at_line(no), "intent", "empty intent");
    if (intent.find_first_of(" \t") != std::string_view::npos) {
      throw DataError(path, at_line(no), "intent",
                      "intent " + quote_for_message(intent) + " contains whitespace");
    }
    ex.intent = std::string(intent);

    // Tokens are separated by runs of spaces or tabs (Python's str.split()).
    std::string_view words = line.substr(0, sep);
    std::size_t pos = 0;
    while (true) {
      pos = words.find_first_not_of(" \t", pos);
      if (pos == std::string_view::npos) break;
      std::size_t end = words.find_first_of(" \t", pos);
      if (end == std::string_view::npos) end = words.size();
      std::string_view tok = words.substr(pos, end - pos);
      pos = end;
      // Tags never hold a colon, so the last one separates word and tag: "::TAG" is the word
      // ":" and "5:30:B-SL_TIME" the word "5:30".
      const std::size_t colon = tok.rfind(':');
      if (colon == std::string_view::npos) {
        throw DataError(path, at_line(no), "",
                        "token " + quote_for_message(tok) + " has no ':' between word and tag");
      }
      const std::string_view word = tok.substr(0, colon);
      const std::string_view tag = tok.substr(colon + 1);
      if (word.empty()) {
        throw DataError(path, at_line(no), "",
                        "token " + quote_for_message(tok) + " has an empty word");
      }
      if (!valid_tag(tag)) {
        throw DataError(path, at_line(no), "",
                        "token " + quote_for_message(tok) + ": tag " + quote_for_message(tag) +
                            " is not O, B-<label> or I-<label>");
      }
      ex.words.emplace_back(word);
      ex.tags.emplace_back(tag);
    }
    if (ex.words.empty()) throw DataError(path, at_line(no), "", "no tagged words before ' <=> '");
    out.push_back(std::move(ex));
  });
  return out;
}

std::vector<std::string> top_intent_vocab(const std::vector<TopExample>& examples) {
  std::set<std::string> s;
  for (const TopExample& ex : examples) s.insert(ex.intent);
  return {s.begin(), s.end()};
}

std::vector<std::string> top_tag_vocab(const std::vector<TopExample>& examples) {
  std::set<std::string> s;
  for (const TopExample& ex : examples) s.insert(ex.tags.begin(), ex.tags.end());
  return {s.begin(), s.end()};
}

std::vector<std::string> read_vocab_lines(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  std::vector<std::string> out;
  for_each_line(bytes, [&](std::size_t no, std::string_view line) {
    check_utf8(path, no, line);
    if (line.empty()) throw DataError(path, at_line(no), "", "empty line in a vocabulary file");
    out.emplace_back(line);
  });
  return out;
}

}  // namespace dialtree::readers
