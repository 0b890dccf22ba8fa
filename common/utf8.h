// UTF-8 helpers. Character offsets everywhere in dialtree (STS spans, DialoGLUE valueSpan, SGD
// slot spans) are Unicode code point offsets, as Python's str indexing counts them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree::utf8 {

/// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool is_valid(std::string_view s);

/// Length in bytes (1-4) of the well-formed UTF-8 sequence that starts at s[i], or 0 if the
/// bytes there are not one (overlong, surrogate, > U+10FFFF, truncated). Requires i < s.size().
std::size_t sequence_length(std::string_view s, std::size_t i);

/// Byte offset of the first invalid sequence, or std::string_view::npos if valid.
std::size_t first_invalid(std::string_view s);

/// Byte offset of every code point start, plus s.size() at the end (size = count + 1).
/// Requires valid UTF-8.
std::vector<std::size_t> codepoint_offsets(std::string_view s);

/// Number of code points. Requires valid UTF-8.
std::size_t length(std::string_view s);

/// Code points [start, end) of `s` (Python `s[start:end]` for 0 <= start <= end <= length).
/// Scans `s` from its start, O(end) per call: to cut many slices out of one text, slice with
/// the byte offsets of codepoint_offsets(s) instead (linear overall).
/// @throws std::out_of_range if start > end or end > length(s).
std::string substr(std::string_view s, std::size_t start, std::size_t end);

/// Decodes to code points. Requires valid UTF-8.
std::u32string decode(std::string_view s);
/// Encodes code points to UTF-8.
std::string encode(std::u32string_view cps);
/// Appends one code point's UTF-8 encoding to `out`.
void append(std::string& out, char32_t cp);

}  // namespace dialtree::utf8
