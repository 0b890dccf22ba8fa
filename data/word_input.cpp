#include "data/word_input.h"

#include <algorithm>
#include <stdexcept>
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

}  // namespace

std::vector<WordSpan> split_words(std::string_view text) {
  if (!utf8::is_valid(text)) throw std::invalid_argument("split_words: invalid UTF-8");
  std::vector<WordSpan> out;
  WordSpan cur;
  bool in_word = false;
  std::size_t i = 0, cp_index = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n =
        utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(&text[i]),
                         static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    const auto len = static_cast<std::size_t>(n);
    if (is_python_space(static_cast<char32_t>(cp))) {
      if (in_word) {
        cur.stop = cp_index;
        out.push_back(std::move(cur));
        cur = WordSpan{};
      }
      in_word = false;
    } else {
      if (!in_word) cur.start = cp_index;
      cur.text.append(text.substr(i, len));
      in_word = true;
    }
    i += len;
    ++cp_index;
  }
  if (in_word) {
    cur.stop = cp_index;
    out.push_back(std::move(cur));
  }
  return out;
}

WordPieces encode_word_pieces(const std::vector<std::string>& words, const Tokenizer& tok) {
  WordPieces out;
  out.first.assign(words.size(), -1);
  for (std::size_t w = 0; w < words.size(); ++w) {
    const std::vector<std::int32_t> pieces = tok.encode(words[w]);
    if (!pieces.empty()) out.first[w] = static_cast<std::int64_t>(out.ids.size());
    out.ids.insert(out.ids.end(), pieces.begin(), pieces.end());
  }
  return out;
}

void keep_first_pieces(WordPieces& pieces, std::size_t keep) {
  if (pieces.ids.size() <= keep) return;
  pieces.ids.resize(keep);
  for (auto& f : pieces.first) {
    if (f >= static_cast<std::int64_t>(keep)) f = -1;
  }
}

std::vector<std::int64_t> first_piece_rows(const SerializedExample& ex, const WordPieces& pieces) {
  // The last wrapped utterance: [sos] kept ids [eos], its marker at position 0; serialisation
  // keeps an utterance's last ids, so the first `drop` of pieces.ids are gone.
  const auto n = static_cast<std::int64_t>(ex.position_ids.size());
  std::int64_t start = n - 1;
  while (start >= 0 && ex.position_ids[static_cast<std::size_t>(start)] != 0) --start;
  const std::int64_t kept = n - start - 2;
  const auto total = static_cast<std::int64_t>(pieces.ids.size());
  if (start < 0 || kept < 0 || kept > total ||
      !std::equal(pieces.ids.end() - kept, pieces.ids.end(),
                  ex.input_ids.begin() + start + 1)) {
    throw std::invalid_argument(
        "first_piece_rows: the example's last utterance is not a cut of the words' pieces");
  }
  const std::int64_t drop = total - kept;
  std::vector<std::int64_t> rows;
  rows.reserve(pieces.first.size());
  // Row of id j of the utterance: after [CLS] (row 0), the earlier turns and [sos].
  for (const std::int64_t f : pieces.first) rows.push_back(f >= drop ? start + 2 + (f - drop) : -1);
  return rows;
}

TaggedInput encode_words(const std::vector<std::string>& words, const Tokenizer& tok,
                         const SerializeOptions& so) {
  const WordPieces pieces = encode_word_pieces(words, tok);
  TaggedInput out;
  out.input = serialize_context({Utterance{"user", pieces.ids}}, tok.special(), so);
  out.first_row = first_piece_rows(out.input, pieces);
  return out;
}

}  // namespace dialtree::data
