// DialoGLUE intent-classification data (BANKING77, CLINC150, HWU64): `categories.json` plus
// RFC 4180 CSV files with the header `text,category` (docs/dialoglue.md §3).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dialtree::readers {

/// One label -> id map shared by every split (docs/failure-cases.md C03). Ids are positions in
/// `categories.json`, in the file's own order (BANKING77's is not sorted).
class LabelMap {
 public:
  /// An empty map (every find() gives -1).
  LabelMap() = default;
  /// Ids are positions in `names`; `source` (e.g. the categories.json path) is only used in
  /// error messages. @throws DataError naming the index (`[3]`) of a duplicate or empty name.
  explicit LabelMap(std::vector<std::string> names, const std::string& source = "");
  /// Reads a JSON list of strings (DialoGLUE `categories.json`, docs/dialoglue.md §3).
  /// @throws DataError (unreadable file, invalid JSON, empty list, duplicate/empty name) /
  ///   SchemaError (root not an array, element not a string) naming the file and index.
  static LabelMap from_categories_json(const std::string& path);

  /// Id of `name`, or -1 if unknown.
  int find(const std::string& name) const;
  /// Name of `id`. @throws std::out_of_range if `id` is not in [0, size()).
  const std::string& name(int id) const { return names_.at(static_cast<std::size_t>(id)); }
  /// All names, id order.
  const std::vector<std::string>& names() const { return names_; }
  /// Number of labels.
  std::size_t size() const { return names_.size(); }
  /// Where the names came from ("" if built in code); used in "not in <source>" messages.
  const std::string& source() const { return source_; }

 private:
  std::vector<std::string> names_;
  std::string source_;
  std::unordered_map<std::string, int> ids_;
};

/// One CSV record after the header.
struct IntentExample {
  std::string text;      ///< utterance, verbatim (may contain newlines)
  std::string label;     ///< label name as written in the file
  int label_id = -1;     ///< id in the LabelMap
  std::size_t line = 0;  ///< 1-based physical line where the record starts
};

/// Options of read_intent_csv.
struct IntentCsvOptions {
  /// If set, labels not in the map get this label's id (an explicit out-of-scope policy, C03);
  /// it must itself be in the map (else read_intent_csv throws std::invalid_argument). If unset,
  /// an unknown label is a DataError. `IntentExample::label` keeps the name from the file.
  std::optional<std::string> unknown_label_as;
  /// If true, `labels` is ignored and the label set is the file's own: every label the file
  /// uses, ids in order of first appearance (for a user's CSV without a categories.json). The
  /// set is returned in IntentCsv::labels. An empty label is then a DataError naming its line.
  bool labels_from_file = false;
};

/// A whole intent CSV file.
struct IntentCsv {
  std::vector<std::string> header;  ///< exactly {"text", "category"} (BOM already dropped)
  std::vector<IntentExample> rows;  ///< file order, header excluded
  /// The label names behind the ids: those of `labels`, or with
  /// IntentCsvOptions::labels_from_file the file's own, in order of first appearance.
  std::vector<std::string> labels;
};

/// Reads an intent CSV (docs/dialoglue.md §3) with libcsv in strict mode: one leading UTF-8 BOM is
/// dropped (C01; a BOM anywhere else is text), CRLF or LF, quoted fields with doubled quotes and
/// embedded newlines (RFC 4180). Fields are kept verbatim (no space trimming, like Python's
/// csv). The header must be exactly `text,category`; every record must have exactly 2 fields;
/// an empty line between records is an error (Python's csv yields an empty row there, which
/// DialoGLUE's loader cannot unpack). Labels map through the one shared `labels` (C03).
/// Line numbers are physical lines (LF-terminated), 1-based, counting the header as line 1.
/// @throws DataError naming the file, the line and the field for: a bad header, a record with
///   the wrong number of fields, an empty line, a stray quote (`ab"c`, `"ab"c`), an unterminated
///   quote (line where its record starts), invalid UTF-8, an unknown label (C03:
///   `test.csv: line 3: field 'category': label 'chitchat' not in categories.json`), an empty
///   file, or a read failure.
/// @throws std::invalid_argument if `options.unknown_label_as` is not in `labels`.
IntentCsv read_intent_csv(const std::string& path, const LabelMap& labels,
                          const IntentCsvOptions& options = {});

}  // namespace dialtree::readers
