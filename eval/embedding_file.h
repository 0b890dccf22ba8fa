// Embedding files (docs/evaluation.md, "Probe"; --dump-embeddings, bench/reference/probe.py,
// tests/fixtures/probe): a matrix of embeddings with its labels as a little-endian float32 file
// and a JSON header. Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "eval/probe_matrix.h"

namespace dialtree::eval {

/// A matrix of embeddings with its labels, as write_embeddings() stores it.
struct EmbeddingFile {
  ProbeMatrix x;                         ///< [rows, dim]
  std::vector<int> labels;               ///< rows class ids
  std::vector<std::string> label_names;  ///< class id -> name (may be empty)
};

/// Writes `<stem>.f32` (rows x dim little-endian float32, row-major, nothing else) and
/// `<stem>.json` ({"format": "dialtree-embeddings/1", "rows", "dim", "dtype": "float32",
/// "byte_order": "little", "data": "<file name of the .f32>", "labels": [...], "label_names":
/// [...]} plus the members of `extra`), each atomically. numpy reads the matrix with
/// numpy.fromfile(path, dtype="<f4").reshape(rows, dim).
/// @throws std::invalid_argument if labels and rows differ in number; std::runtime_error on
///   I/O failure.
void write_embeddings(const std::string& stem, const ProbeMatrix& x, const std::vector<int>& labels,
                      const std::vector<std::string>& label_names, const nlohmann::json& extra);

/// Reads what write_embeddings() wrote at `stem`.
/// @throws DataError naming the file for a missing or malformed header or a data file of the
///   wrong size.
EmbeddingFile read_embeddings(const std::string& stem);

}  // namespace dialtree::eval
