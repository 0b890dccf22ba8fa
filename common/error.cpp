#include "common/error.h"

#include "common/utf8.h"

#include <cstdio>

namespace dialtree {
namespace {
std::string compose(const std::string& file, const std::string& where, const std::string& field,
                    const std::string& message) {
  // Control characters and invalid bytes are escaped; quotes stay as they are, since places
  // and fields quote names themselves ("tensor 'b'").
  std::string s = file.empty() ? std::string("<input>") : escape_for_message(file, 0, false);
  if (!where.empty()) s += ": " + escape_for_message(where, 0, false);
  if (!field.empty()) s += ": field '" + escape_for_message(field, 0, false) + "'";
  return s + ": " + message;
}

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  out += prefix;
  out += buf;
}
}  // namespace

std::string escape_for_message(std::string_view value, std::size_t max_chars, bool escape_quotes) {
  std::string out;
  out.reserve(value.size() + 2);
  std::size_t chars = 0;
  for (std::size_t i = 0; i < value.size();) {
    if (max_chars != 0 && chars == max_chars) {
      out += "...";
      break;
    }
    ++chars;
    const auto c = static_cast<unsigned char>(value[i]);
    const std::size_t n = utf8::sequence_length(value, i);
    if (n == 0) {  // a byte of invalid UTF-8
      append_hex(out, "\\x", c, 2);
      ++i;
      continue;
    }
    if (n == 1) {
      switch (c) {
        case '\\':
          out += escape_quotes ? "\\\\" : "\\";
          break;
        case '\'':
          out += escape_quotes ? "\\'" : "'";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          if (c < 0x20 || c == 0x7F) {
            append_hex(out, "\\x", c, 2);
          } else {
            out += static_cast<char>(c);
          }
      }
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(value[i + 1]) < 0xA0) {
      // U+0080..U+009F, the C1 control characters.
      append_hex(out, "\\u", static_cast<unsigned char>(value[i + 1]) & 0xFFu, 4);
    } else {
      out.append(value.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string quote_for_message(std::string_view value, std::size_t max_chars) {
  return "'" + escape_for_message(value, max_chars) + "'";
}

DataError::DataError(std::string file, std::string where, std::string field, std::string message)
    : std::runtime_error(compose(file, where, field, message)),
      file_(std::move(file)),
      where_(std::move(where)),
      field_(std::move(field)),
      detail_(std::move(message)) {}

std::string at_line(std::size_t line) {
  return "line " + std::to_string(line);
}
std::string at_record(std::size_t index) {
  return "record " + std::to_string(index);
}

}  // namespace dialtree
