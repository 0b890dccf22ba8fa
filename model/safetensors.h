// The safetensors file format (https://huggingface.co/docs/safetensors), written and read here
// with nlohmann/json (no torch pickles), so any language's safetensors reader can load a
// dialtree model bundle (docs/training.md "Model bundle").
//
// Layout: 8-byte little-endian header length N; N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 2],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8; then the tensors' raw little-endian bytes, row-major,
// back to back (offsets relative to the end of the header).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/torch_api.h"

namespace dialtree::model {

/// Named tensors in a fixed order (a state dict).
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// A parsed safetensors file.
struct SafetensorsContents {
  NamedTensors tensors;                         ///< CPU, contiguous, in file (offset) order
  std::map<std::string, std::string> metadata;  ///< "__metadata__" (empty when absent)
};

/// safetensors dtype name of `type` ("F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8",
/// "U8", "BOOL"). @throws std::invalid_argument for any other scalar type.
std::string safetensors_dtype_name(torch::ScalarType type);

/// Writes `tensors` (any device; copied to CPU) and `metadata` to `path` atomically (temporary
/// file + rename). Data is ordered by element size, largest first (stable), so every tensor
/// stays aligned to its element size; names keep their relative order within a size.
/// @throws std::invalid_argument for an empty, repeated or "__metadata__" name or an
///   unsupported dtype (naming the tensor); std::runtime_error on I/O failure.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a safetensors file: header length within the file, JSON header an
/// object, each entry {dtype, shape, data_offsets} with a known dtype, non-negative shape and
/// byte size = numel × element size, offsets covering the data section exactly with no
/// overlap or gap, metadata values strings.
/// @throws DataError naming `path` (and the tensor, if one is at fault) on any violation or
///   I/O failure.
SafetensorsContents load_safetensors(const std::string& path);

}  // namespace dialtree::model
