// DialoGLUE TOP semantic parsing: lines `word:TAG word:TAG ... <=> IN_INTENT`
// plus `vocab.intent` / `vocab.slot` (docs/dialoglue.md §5).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dialtree::readers {

/// One line of a TOP file.
struct TopExample {
  /// Words as written. A bare-colon token `::TAG` is kept as word ":" with tag TAG (DialoGLUE's
  /// own loader turns it into an empty word that yields no word pieces; see data/dialoglue).
  std::vector<std::string> words;
  std::vector<std::string> tags;  ///< one per word: "O", "B-SL_X", "I-SL_X_IN_Y_SL_Z", ...
  std::string intent;             ///< root intent, e.g. "IN_GET_LOCATION"
  std::size_t line = 0;           ///< 1-based line number
};

/// Reads a TOP file (docs/dialoglue.md §5). Tokens are split on runs of spaces/tabs; word = text
/// before the token's last ':', tag = the rest (tags never hold a colon), so `::TAG` is the word
/// ":" and `10:30:B-SL_TIME` the word "10:30". A trailing CR is stripped and one leading BOM
/// dropped.
/// @throws DataError naming file, line and the bad token for: missing or repeated " <=> ", a
///   token without ':', an empty word, a tag that is not O / B-... / I-..., an empty intent or
///   one with spaces, no words, an empty line, invalid UTF-8, or a read failure.
std::vector<TopExample> read_top(const std::string& path);

/// Root intent or slot tag set of `examples`: byte-sorted, de-duplicated (vocab.intent /
/// vocab.slot are "sorted sets over train+eval+test", docs/dialoglue.md §2; verified equal to the
/// real files).
std::vector<std::string> top_intent_vocab(const std::vector<TopExample>& examples);
std::vector<std::string> top_tag_vocab(const std::vector<TopExample>& examples);

/// Reads a one-entry-per-line vocabulary file (vocab.intent, vocab.slot, BERT vocab.txt), in
/// file order (id = index). Trailing CR is stripped, one leading BOM dropped, a final LF does not
/// add an entry; other characters (spaces included) are kept. @throws DataError naming the line
/// of an empty line or of invalid UTF-8, or a read failure.
std::vector<std::string> read_vocab_lines(const std::string& path);

}  // namespace dialtree::readers
