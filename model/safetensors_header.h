// The header of a safetensors file (https://huggingface.co/docs/safetensors), parsed and checked
// without LibTorch: the 8-byte little-endian header length, then the JSON header
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 2],
//    "data_offsets": [begin, end]}, ...}
// load_safetensors (model/safetensors.h) reads the tensors this describes; the guard build tests
// and fuzzes this part on its own (docs/build.md "Guard build").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree::model {

/// Largest header accepted (the reference implementation's limit), in bytes.
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

/// Bytes per element of safetensors dtype `name` ("F64", "F32", "F16", "BF16", "I64", "I32",
/// "I16", "I8", "U8", "BOOL"), or 0 for any other name. Never throws.
std::size_t safetensors_element_size(std::string_view name);

/// One tensor of the header, checked against the data section.
struct SafetensorsEntry {
  std::string name;                 ///< the header key
  std::string dtype;                ///< one of the names safetensors_element_size() knows
  std::vector<std::int64_t> shape;  ///< every dimension >= 0
  std::uint64_t begin = 0;          ///< data_offsets[0], relative to the end of the header
  std::uint64_t end = 0;            ///< data_offsets[1]; end - begin = numel * element size
};

/// A parsed, validated header.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;        ///< sorted by offset: they tile the data section
  std::map<std::string, std::string> metadata;  ///< "__metadata__" (empty when absent)
};

/// The header length N from the first 8 bytes of a file of `file_size` bytes (`prefix` holds at
/// least min(8, file_size) of them). `path` is only used in errors.
/// @throws DataError naming `path` if the file is shorter than 8 bytes, or N exceeds the rest of
///   the file or kMaxSafetensorsHeader.
std::uint64_t parse_safetensors_header_length(std::string_view prefix, std::uint64_t file_size,
                                              const std::string& path);

/// Parses and validates the JSON header `text` of a file whose data section (what follows the
/// header) has `data_size` bytes: the header must be a JSON object; each entry {dtype, shape,
/// data_offsets} (no other field) with a known dtype, non-negative integer shape and offsets, and
/// byte size = numel x element size; the entries cover the data section exactly, with no overlap
/// or gap; "__metadata__", if present, is an object of strings.
/// @throws DataError naming `path` (and the tensor, if one is at fault) on any violation.
SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t data_size,
                                           const std::string& path);

}  // namespace dialtree::model
