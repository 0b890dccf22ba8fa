// BERT WordPiece tokenizer (docs/dialoglue.md §8). Unicode properties, NFD/NFC and simple case
// mappings come from libutf8proc; the steps and their order follow Hugging Face's Python
// BertTokenizer (BasicTokenizer + WordpieceTokenizer).
#include "data/wordpiece.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <utf8proc.h>

#include "common/error.h"
#include "common/input_file.h"
#include "common/utf8.h"

namespace dialtree::data {

namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// BERT `_is_control`: category C* (Cc, Cf, Cs, Co, Cn), except \t \n \r (whitespace).
bool is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      return true;
    default:
      return false;
  }
}

// BERT `_is_whitespace`: space, \t, \n, \r or category Zs.
bool is_bert_whitespace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || category(c) == UTF8PROC_CATEGORY_ZS;
}

// Python's str.isspace() (what str.split() splits on): category Zs or bidirectional class
// WS, B or S. After cleaning this adds U+2028 / U+2029 to the plain space.
bool is_python_space(char32_t c) {
  if (category(c) == UTF8PROC_CATEGORY_ZS) return true;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return p->bidi_class == UTF8PROC_BIDI_CLASS_WS || p->bidi_class == UTF8PROC_BIDI_CLASS_B ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

// BERT `_is_chinese_char`: the CJK Unified Ideographs blocks (not Hiragana/Katakana/Hangul).
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT `_is_punctuation`: all non-alphanumeric ASCII symbols, or Unicode category P*.
bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Unicode "Cased": Lu/Ll/Lt, anything with a case mapping, or the few Other_Lowercase /
// Other_Uppercase characters that have neither (ordinal indicators, squared Latin capitals).
bool is_cased(char32_t c) {
  if (c == 0x00AA || c == 0x00BA || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189)) {
    return true;
  }
  const auto cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) {
    return true;
  }
  const auto i = static_cast<utf8proc_int32_t>(c);
  return utf8proc_tolower(i) != i || utf8proc_toupper(i) != i || utf8proc_totitle(i) != i;
}

// Unicode "Case_Ignorable": Mn, Me, Cf, Lm, Sk, or Word_Break MidLetter / MidNumLet /
// Single_Quote (the short list below; utf8proc has no Word_Break property).
bool is_case_ignorable(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  switch (c) {
    case 0x0027:
    case 0x002E:
    case 0x003A:
    case 0x00B7:
    case 0x0387:
    case 0x055F:
    case 0x05F4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xFE13:
    case 0xFE52:
    case 0xFE55:
    case 0xFF07:
    case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      return false;
  }
}

// Python's str.lower() on one token: simple lower-case mapping, plus the two context-free /
// contextual SpecialCasing rules Python applies: U+0130 -> "i" U+0307 and Final_Sigma.
std::u32string python_lower(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    if (c == 0x0130) {
      out += U'i';
      out += char32_t{0x0307};
    } else if (c == 0x03A3) {
      // Final_Sigma: cased (case-ignorable)* SIGMA not followed by (case-ignorable)* cased.
      std::size_t j = i;
      while (j > 0 && is_case_ignorable(s[j - 1])) --j;
      bool final_sigma = j > 0 && is_cased(s[j - 1]);
      if (final_sigma) {
        std::size_t k = i + 1;
        while (k < s.size() && is_case_ignorable(s[k])) ++k;
        final_sigma = k == s.size() || !is_cased(s[k]);
      }
      out += final_sigma ? char32_t{0x03C2} : char32_t{0x03C3};
    } else {
      out += static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
    }
  }
  return out;
}

// Canonical decomposition (NFD) of `s`, with canonical reordering of combining marks.
std::u32string nfd(const std::u32string& s) {
  const std::string bytes = utf8::encode(s);
  const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(bytes.data());
  const auto len = static_cast<utf8proc_ssize_t>(bytes.size());
  const auto opts = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE);
  utf8proc_ssize_t n = utf8proc_decompose(src, len, nullptr, 0, opts);
  if (n < 0) throw TokenizerError(std::string("NFD failed: ") + utf8proc_errmsg(n));
  std::vector<utf8proc_int32_t> buf(static_cast<std::size_t>(n));
  n = utf8proc_decompose(src, len, buf.data(), n, opts);
  if (n < 0) throw TokenizerError(std::string("NFD failed: ") + utf8proc_errmsg(n));
  return std::u32string(buf.begin(), buf.begin() + n);
}

// Canonical composition (NFC) of `s`.
std::u32string nfc(const std::u32string& s) {
  const std::string bytes = utf8::encode(s);
  utf8proc_uint8_t* dst = nullptr;
  const auto opts = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data()),
                                          static_cast<utf8proc_ssize_t>(bytes.size()), &dst, opts);
  if (n < 0) throw TokenizerError(std::string("NFC failed: ") + utf8proc_errmsg(n));
  std::string composed(reinterpret_cast<const char*>(dst), static_cast<std::size_t>(n));
  std::free(dst);
  return utf8::decode(composed);
}

void require_utf8(std::string_view text, const char* what) {
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != std::string_view::npos) {
    throw TokenizerError(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(bad));
  }
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(const std::string& vocab_path, WordPieceOptions options)
    : vocab_path_(vocab_path), options_(std::move(options)) {
  std::ifstream in;
  if (const int err = open_input_file(in, vocab_path); err != 0) {
    throw TokenizerError("WordPiece vocab '" + vocab_path + "': " + open_error_message(err));
  }
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!utf8::is_valid(line)) {
      throw TokenizerError("WordPiece vocab '" + vocab_path + "': line " + std::to_string(line_no) +
                           ": invalid UTF-8");
    }
    const auto id = static_cast<std::int32_t>(vocab_.size());
    if (!ids_.emplace(line, id).second) {
      throw TokenizerError("WordPiece vocab '" + vocab_path + "': line " + std::to_string(line_no) +
                           ": duplicate token " + quote_for_message(line));
    }
    vocab_.push_back(line);
  }
  if (in.bad()) {
    throw TokenizerError("WordPiece vocab '" + vocab_path +
                         "': read error: " + std::strerror(errno));
  }
  if (vocab_.empty()) throw TokenizerError("WordPiece vocab '" + vocab_path + "': file is empty");
  if (ids_.count(options_.unk_token) == 0) {
    throw TokenizerError("WordPiece vocab '" + vocab_path + "': lacks the unk token " +
                         quote_for_message(options_.unk_token));
  }
}

namespace {

// One word of BasicTokenizer with, for each of its characters, the input bytes it came from.
struct AlignedWord {
  std::u32string text;
  std::vector<std::size_t> begin, end;

  void push(char32_t c, std::size_t b, std::size_t e) {
    text += c;
    begin.push_back(b);
    end.push_back(e);
  }
};

// BERT's BasicTokenizer (docs/dialoglue.md §8) with the input span of every output character:
// 1. clean (drop NUL, U+FFFD and control characters; whitespace -> ' '), 2. isolate CJK,
// 3. whitespace split (Python str.split), 4. lower-case + NFD + drop Mn (uncased) or NFC (cased),
// 5. punctuation split. NFD is applied per lower-cased character (the marks it could reorder are
// the Mn marks dropped next); NFC, which may join characters, per word, and a word it shortens
// maps each character to the whole word.
std::vector<AlignedWord> aligned_words(std::string_view text, bool lower_case) {
  const std::u32string chars = utf8::decode(text);
  const std::vector<std::size_t> offs = utf8::codepoint_offsets(text);
  AlignedWord cleaned;
  for (std::size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = chars[i];
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_bert_whitespace(c)) {
      cleaned.push(U' ', offs[i], offs[i + 1]);
    } else if (is_cjk(c)) {
      cleaned.push(U' ', offs[i], offs[i]);
      cleaned.push(c, offs[i], offs[i + 1]);
      cleaned.push(U' ', offs[i + 1], offs[i + 1]);
    } else {
      cleaned.push(c, offs[i], offs[i + 1]);
    }
  }
  std::vector<AlignedWord> out;
  AlignedWord run;
  const auto flush = [&] {
    if (!run.text.empty()) out.push_back(std::move(run));
    run = AlignedWord{};
  };
  std::size_t i = 0;
  const std::u32string& cl = cleaned.text;
  while (i < cl.size()) {
    while (i < cl.size() && is_python_space(cl[i])) ++i;
    std::size_t j = i;
    while (j < cl.size() && !is_python_space(cl[j])) ++j;
    if (j == i) break;
    AlignedWord token;
    const std::u32string raw = cl.substr(i, j - i);
    if (lower_case) {
      // python_lower maps one character to one, except U+0130 (to two).
      const std::u32string lowered = python_lower(raw);
      std::size_t k = 0;
      for (std::size_t src = i; src < j; ++src) {
        const std::size_t count = cl[src] == 0x0130 ? 2 : 1;
        for (std::size_t m = 0; m < count; ++m, ++k) {
          const char32_t c = lowered[k];
          if (c < 0x80) {  // ASCII: NFD is the identity and nothing is a mark
            token.push(c, cleaned.begin[src], cleaned.end[src]);
            continue;
          }
          for (char32_t d : nfd(std::u32string(1, c))) {
            if (category(d) != UTF8PROC_CATEGORY_MN) {
              token.push(d, cleaned.begin[src], cleaned.end[src]);
            }
          }
        }
      }
    } else {
      const std::u32string composed = nfc(raw);
      for (std::size_t k = 0; k < composed.size(); ++k) {
        const bool same = composed.size() == raw.size();
        token.push(composed[k], cleaned.begin[same ? i + k : i], cleaned.end[same ? i + k : j - 1]);
      }
    }
    i = j;
    for (std::size_t k = 0; k < token.text.size(); ++k) {
      const char32_t c = token.text[k];
      if (is_punctuation(c)) {
        flush();
        run.push(c, token.begin[k], token.end[k]);
        flush();
      } else if (is_python_space(c)) {
        flush();
      } else {
        run.push(c, token.begin[k], token.end[k]);
      }
    }
    flush();
  }
  return out;
}

}  // namespace

std::vector<std::string> WordPieceTokenizer::basic_tokenize(std::string_view text) const {
  require_utf8(text, "WordPiece basic_tokenize");
  std::vector<std::string> out;
  for (const AlignedWord& w : aligned_words(text, options_.lower_case)) {
    out.push_back(utf8::encode(w.text));
  }
  return out;
}

std::vector<std::string> WordPieceTokenizer::wordpiece(std::string_view word) const {
  return wordpiece_ranges(word, nullptr);
}

std::vector<std::string> WordPieceTokenizer::wordpiece_ranges(
    std::string_view word, std::vector<std::pair<std::size_t, std::size_t>>* ranges) const {
  require_utf8(word, "WordPiece wordpiece");
  const std::vector<std::size_t> offs = utf8::codepoint_offsets(word);
  const std::size_t n = offs.size() - 1;
  if (ranges) ranges->clear();
  if (n == 0) return {};
  const auto unk = [&] {
    if (ranges) *ranges = {{0, n}};
    return std::vector<std::string>{options_.unk_token};
  };
  if (n > options_.max_input_chars_per_word) return unk();
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (start < n) {
    std::size_t end = n;
    bool found = false;
    std::string candidate;
    while (start < end) {
      candidate = start > 0 ? "##" : "";
      candidate.append(word.substr(offs[start], offs[end] - offs[start]));
      if (ids_.count(candidate) != 0) {
        found = true;
        break;
      }
      --end;
    }
    if (!found) return unk();
    pieces.push_back(std::move(candidate));
    if (ranges) ranges->emplace_back(start, end);
    start = end;
  }
  return pieces;
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (const std::string& word : basic_tokenize(text)) {
    for (std::string& piece : wordpiece(word)) out.push_back(std::move(piece));
  }
  return out;
}

std::vector<std::int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  for (const std::string& piece : tokenize(text)) ids.push_back(ids_.at(piece));
  return ids;
}

std::vector<TokenSpan> WordPieceTokenizer::encode_with_offsets(std::string_view text) const {
  require_utf8(text, "WordPiece encode_with_offsets");
  std::vector<TokenSpan> out;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (const AlignedWord& w : aligned_words(text, options_.lower_case)) {
    const std::vector<std::string> pieces = wordpiece_ranges(utf8::encode(w.text), &ranges);
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      out.push_back({ids_.at(pieces[p]), w.begin[ranges[p].first], w.end[ranges[p].second - 1]});
    }
  }
  return out;
}

std::string WordPieceTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string joined;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k > 0) joined += ' ';
    joined += id_to_token(ids[k]);
  }
  std::string out;
  out.reserve(joined.size());
  for (std::size_t k = 0; k < joined.size();) {
    if (joined.compare(k, 3, " ##") == 0) {
      k += 3;
    } else {
      out += joined[k++];
    }
  }
  const std::size_t b = out.find_first_not_of(' ');
  if (b == std::string::npos) return {};
  return out.substr(b, out.find_last_not_of(' ') - b + 1);
}

std::int32_t WordPieceTokenizer::token_to_id(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

std::string WordPieceTokenizer::id_to_token(std::int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw TokenizerError("WordPiece: id " + std::to_string(id) + " is outside [0, " +
                         std::to_string(vocab_size()) + ")");
  }
  return vocab_[static_cast<std::size_t>(id)];
}

}  // namespace dialtree::data
