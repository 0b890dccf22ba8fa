// Plain text corpora: one utterance per line, unlabelled.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dialtree::readers {

/// One non-blank line.
struct TextLine {
  std::string text;      ///< line without its LF / CRLF
  std::size_t line = 0;  ///< 1-based
};

/// What read_text_lines skipped.
struct TextLoadReport {
  std::size_t blank_lines = 0;  ///< skipped lines: empty or only spaces / tabs / CR / FF / VT
};

/// Reads non-blank lines of a UTF-8 text file (LF or CRLF; a final LF adds no line); one leading
/// UTF-8 BOM is dropped; text is kept verbatim (no trimming). `report` may be null; its counter
/// accumulates. @throws DataError naming the line of invalid UTF-8, or a read failure.
std::vector<TextLine> read_text_lines(const std::string& path, TextLoadReport* report = nullptr);

}  // namespace dialtree::readers
