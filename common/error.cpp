#include "common/error.h"

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

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
std::size_t utf8_seq_len(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  char32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
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
    const std::size_t n = utf8_seq_len(value, i);
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
