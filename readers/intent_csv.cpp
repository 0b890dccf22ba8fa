#include "readers/intent_csv.h"

#include <csv.h>

#include <cctype>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

// ---------------------------------------------------------------------------------------------
// LabelMap

LabelMap::LabelMap(std::vector<std::string> names, const std::string& source)
    : names_(std::move(names)), source_(source) {
  ids_.reserve(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::string& n = names_[i];
    const std::string field = json_index_path("", i);
    if (n.empty()) throw DataError(source_, "", field, "empty label name");
    auto [it, inserted] = ids_.emplace(n, static_cast<int>(i));
    if (!inserted) {
      throw DataError(source_, "", field,
                      "duplicate label " + quote_for_message(n) + " (first at [" +
                          std::to_string(it->second) + "])");
    }
  }
}

LabelMap LabelMap::from_categories_json(const std::string& path) {
  const json root = json_parse_file(path);
  const JsonPlace place{path, ""};
  const json& list = json_as_array(root, place, "(root)");
  if (list.empty()) throw DataError(path, "", "", "categories list is empty");
  std::vector<std::string> names;
  names.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    names.push_back(json_as_string(list[i], place, json_index_path("", i)));
  }
  return LabelMap(std::move(names), path);
}

int LabelMap::find(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

// ---------------------------------------------------------------------------------------------
// CSV

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

/// One complete CSV record as libcsv delivered it.
struct Record {
  std::vector<std::string> fields;
  std::size_t line = 0;  // 1-based physical line where the record starts
};

/// State shared with the libcsv callbacks. The callbacks never throw (they run inside C code);
/// completed records are queued and checked by the C++ caller after each csv_parse call.
struct ParseState {
  std::vector<std::string> fields;  // fields of the record being read
  std::vector<Record> done;         // completed, not yet checked
  std::size_t record_start = 0;     // line of the record being read
  bool row_ended = false;           // a row callback fired during the last chunk
  bool out_of_memory = false;
};

void on_field(void* data, std::size_t len, void* user) {
  auto* st = static_cast<ParseState*>(user);
  try {
    st->fields.emplace_back(data ? static_cast<const char*>(data) : "", data ? len : 0);
  } catch (...) {
    st->out_of_memory = true;
  }
}

void on_row(int /*terminator*/, void* user) {
  auto* st = static_cast<ParseState*>(user);
  try {
    st->done.push_back(Record{std::move(st->fields), st->record_start});
  } catch (...) {
    st->out_of_memory = true;
  }
  st->fields.clear();
  st->row_ended = true;
}

// Nothing is "space": libcsv would otherwise trim spaces and tabs around unquoted fields,
// which RFC 4180 (and Python's csv module, which wrote these files) does not do.
int no_space(unsigned char) {
  return 0;
}

/// RAII owner of a libcsv parser.
class CsvParser {
 public:
  CsvParser() {
    if (csv_init(&p_, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
      throw std::bad_alloc();
    }
    csv_set_space_func(&p_, no_space);
  }
  ~CsvParser() { csv_free(&p_); }
  CsvParser(const CsvParser&) = delete;
  CsvParser& operator=(const CsvParser&) = delete;
  csv_parser* get() { return &p_; }

 private:
  csv_parser p_{};
};

/// Name of the field at 0-based `index` of a record, for error messages.
std::string field_name(std::size_t index) {
  if (index == 0) return "text";
  if (index == 1) return "category";
  return "field " + std::to_string(index + 1);
}

bool is_terminator_only(std::string_view s) {
  return s.find_first_not_of("\r\n") == std::string_view::npos;
}

// `s` quoted and escaped (quote_for_message), cut after 60 bytes without splitting a UTF-8
// sequence.
std::string quoted_preview(const std::string& s) {
  constexpr std::size_t kMax = 60;
  if (s.size() <= kMax) return quote_for_message(s, 0);
  std::size_t cut = kMax;  // do not split a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  std::string q = quote_for_message(std::string_view(s).substr(0, cut), 0);
  q.insert(q.size() - 1, "...");
  return q;
}

/// The id that labels missing from `labels` get (options.unknown_label_as), or -1 when they are
/// refused. Throws std::invalid_argument when unknown_label_as and labels_from_file are both
/// set, or when unknown_label_as names a label that is not in `labels`.
int intent_fallback_label_id(const LabelMap& labels, const IntentCsvOptions& options) {
  int fallback_id = -1;
  if (options.unknown_label_as && options.labels_from_file) {
    throw std::invalid_argument(
        "IntentCsvOptions: unknown_label_as and labels_from_file exclude each other");
  }
  if (options.unknown_label_as) {
    fallback_id = labels.find(*options.unknown_label_as);
    if (fallback_id < 0) {
      throw std::invalid_argument("IntentCsvOptions::unknown_label_as: label " +
                                  quote_for_message(*options.unknown_label_as) + " is not in " +
                                  (labels.source().empty() ? "the label map" : labels.source()));
    }
  }
  return fallback_id;
}

/// Checks the records libcsv completes and collects them into an IntentCsv: the first record
/// must be the header, each later one becomes an IntentExample with its label id.
class IntentRecordSink {
 public:
  IntentRecordSink(const std::string& path, const LabelMap& labels,
                   const IntentCsvOptions& options, int fallback_id)
      : path_(path),
        labels_(labels),
        options_(options),
        fallback_id_(fallback_id),
        label_source_(labels.source().empty() ? std::string("the label map") : labels.source()) {
    if (!options_.labels_from_file) out_.labels = labels_.names();
  }

  /// Validates the records queued in `st` and moves them into the result, then empties the
  /// queue. Throws std::bad_alloc when a callback ran out of memory, DataError on a bad header
  /// or row.
  void take(ParseState& st) {
    if (st.out_of_memory) throw std::bad_alloc();
    for (Record& r : st.done) {
      if (!have_header_) {
        take_header(r);
        continue;
      }
      IntentExample ex = to_example(r);
      ex.label_id = label_id_of(ex.label, r.line);
      out_.rows.push_back(std::move(ex));
    }
    st.done.clear();
  }

  /// The collected file. Throws DataError when no record (not even the header) was read.
  IntentCsv finish() {
    if (!have_header_) {
      throw DataError(path_, at_line(1), "header", "file is empty; expected 'text,category'");
    }
    return std::move(out_);
  }

 private:
  /// Keeps `r` as the header. Throws DataError unless it is exactly "text,category".
  void take_header(Record& r) {
    if (r.fields.size() != 2 || r.fields[0] != "text" || r.fields[1] != "category") {
      std::string got;
      for (std::size_t i = 0; i < r.fields.size(); ++i) got += (i ? "," : "") + r.fields[i];
      throw DataError(path_, at_line(r.line), "header",
                      "expected exactly 'text,category', got " + quoted_preview(got));
    }
    out_.header = std::move(r.fields);
    have_header_ = true;
  }

  /// The example in data record `r`, its label id not yet set. Throws DataError unless the
  /// record has 2 fields, a text that is not blank and a label without surrounding blanks.
  IntentExample to_example(Record& r) const {
    if (r.fields.size() != 2) {
      throw DataError(path_, at_line(r.line), "",
                      "expected 2 fields (text,category), got " + std::to_string(r.fields.size()) +
                          (r.fields.size() > 2 ? " (quote a text that has a comma)" : ""));
    }
    IntentExample ex;
    ex.text = std::move(r.fields[0]);
    ex.label = std::move(r.fields[1]);
    ex.line = r.line;
    // An utterance with no text says nothing about its intent; DialoGLUE has none.
    if (ex.text.find_first_not_of(" \t") == std::string::npos) {
      throw DataError(path_, at_line(r.line), "text",
                      ex.text.empty() ? "empty text" : "the text is only blanks");
    }
    if (ex.label.empty()) {
      throw DataError(path_, at_line(r.line), "category", "empty label");
    }
    // " lost_card" would be a label of its own beside "lost_card" (Python's csv keeps the
    // blanks too): refused rather than guessed.
    if (std::isspace(static_cast<unsigned char>(ex.label.front())) ||
        std::isspace(static_cast<unsigned char>(ex.label.back()))) {
      throw DataError(path_, at_line(r.line), "category",
                      "label " + quote_for_message(ex.label) +
                          " has leading or trailing blanks; remove them (with them it is "
                          "another label than the same name without)");
    }
    return ex;
  }

  /// The id of `label` (of the record at `line`): a new or known id of the file's own labels
  /// with labels_from_file, else its id in the label map or the fallback id. Throws DataError
  /// when the label is not in the map and there is no fallback.
  int label_id_of(const std::string& label, std::size_t line) {
    if (options_.labels_from_file) {
      const auto [it, added] = own_ids_.emplace(label, static_cast<int>(out_.labels.size()));
      if (added) out_.labels.push_back(label);
      return it->second;
    }
    int id = labels_.find(label);
    if (id < 0) {
      if (fallback_id_ < 0) {
        throw DataError(path_, at_line(line), "category",
                        "label " + quote_for_message(label) + " not in " + label_source_);  // C03
      }
      id = fallback_id_;
    }
    return id;
  }

  const std::string& path_;
  const LabelMap& labels_;
  const IntentCsvOptions& options_;
  const int fallback_id_;
  const std::string label_source_;
  IntentCsv out_;
  std::unordered_map<std::string, int> own_ids_;  // labels_from_file: name -> id
  bool have_header_ = false;
};

/// Splits CSV text into physical lines and feeds them to libcsv, handing each completed record
/// to an IntentRecordSink.
class IntentCsvFeeder {
 public:
  IntentCsvFeeder(const std::string& path, IntentRecordSink& sink) : path_(path), sink_(sink) {}

  /// Parses all of `rest` (the file without its BOM) and the end of input. Throws DataError on
  /// invalid UTF-8, an empty line between records, malformed quoting, a libcsv failure or an
  /// unterminated quoted field, and whatever the sink throws.
  void feed_all(std::string_view rest) {
    std::size_t line_no = 0;
    while (!rest.empty()) {
      ++line_no;
      std::size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl == std::string_view::npos ? rest.size() : nl + 1);
      rest.remove_prefix(line.size());
      if (!check_line(line, rest, line_no)) break;
      feed_line(line, line_no);
    }
    if (csv_fini(parser_.get(), on_field, on_row, &st_) != 0) {
      throw DataError(path_, at_line(st_.record_start), field_name(st_.fields.size()),
                      "unterminated quoted field: the closing quote is missing, so the field runs "
                      "to the end of the file");
    }
    sink_.take(st_);
  }

 private:
  /// False when `line` and all that follows it (`rest`) are blank, which ends the file; true
  /// when the line is to be parsed. Throws DataError on invalid UTF-8 or an empty line between
  /// records.
  bool check_line(std::string_view line, std::string_view rest, std::size_t line_no) const {
    std::size_t bad = utf8::first_invalid(line);
    if (bad != std::string_view::npos) {
      throw DataError(path_, at_line(line_no), open_ ? field_name(st_.fields.size()) : "",
                      "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line");
    }
    // Blank lines (nothing, or spaces and tabs) that end the file, an editor's or a script's
    // extra newlines, end it; a blank line between records is still an error, as it may be a
    // record lost in an edit.
    if (!open_ && line.find_first_not_of(" \t\r\n") == std::string_view::npos &&
        rest.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      return false;
    }
    if (!open_ && is_terminator_only(line)) {
      throw DataError(path_, at_line(line_no), "",
                      "empty line; every record needs 2 fields (text,category)");
    }
    return true;
  }

  /// Feeds one physical line to libcsv and hands completed records to the sink. Throws
  /// DataError on malformed quoting or a libcsv failure, and whatever the sink throws.
  void feed_line(std::string_view line, std::size_t line_no) {
    // Feed the line in chunks that end right after each CR or LF, so that a row callback can
    // only fire on a chunk's last byte: then "did this chunk end the record" is exact, and the
    // line where each record starts is known.
    std::size_t col = 0;
    while (col < line.size()) {
      std::size_t term = line.find_first_of("\r\n", col);
      std::size_t end = term == std::string_view::npos ? line.size() : term + 1;
      std::string_view chunk = line.substr(col, end - col);
      if (!open_ && !is_terminator_only(chunk)) {
        open_ = true;
        st_.record_start = line_no;
      }
      st_.row_ended = false;
      std::size_t used =
          csv_parse(parser_.get(), chunk.data(), chunk.size(), on_field, on_row, &st_);
      if (used != chunk.size()) throw parse_error(line_no, col + used);
      if (st_.row_ended) open_ = false;
      sink_.take(st_);
      col = end;
    }
  }

  /// The error for libcsv stopping at 0-based byte `at` of line `line_no`: malformed quoting,
  /// or the parser's own failure message.
  DataError parse_error(std::size_t line_no, std::size_t at) {
    if (csv_error(parser_.get()) == CSV_EPARSE) {
      return DataError(path_, at_line(line_no), field_name(st_.fields.size()),
                       "malformed quoting at byte " + std::to_string(at + 1) +
                           " of the line: a quote inside an unquoted field or text after a "
                           "closing quote (RFC 4180: quote the field and double inner quotes)");
    }
    return DataError(path_, at_line(line_no), "",
                     std::string("CSV parser failed: ") + csv_strerror(csv_error(parser_.get())));
  }

  const std::string& path_;
  IntentRecordSink& sink_;
  CsvParser parser_;
  ParseState st_;
  bool open_ = false;  // a record has started and not yet ended
};

}  // namespace

IntentCsv read_intent_csv(const std::string& path, const LabelMap& labels,
                          const IntentCsvOptions& options) {
  const int fallback_id = intent_fallback_label_id(labels, options);

  std::string bytes = read_file_bytes(path);
  std::string_view rest(bytes);
  if (rest.substr(0, kBom.size()) == kBom) rest.remove_prefix(kBom.size());  // C01

  IntentRecordSink sink(path, labels, options, fallback_id);
  IntentCsvFeeder(path, sink).feed_all(rest);
  return sink.finish();
}

}  // namespace dialtree::readers
