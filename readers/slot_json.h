// DialoGLUE slot-filling data (Restaurant8k, DSTC8 SGD): JSON list of examples
// `{"userInput":{"text"}, "context":{"requestedSlots"}?, "labels":[{"slot","valueSpan"}]?}`
// (docs/dialoglue.md §4).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dialtree::readers {

/// A labelled value: code point offsets [start, end) into the example text (Python str indices,
/// `valueSpan.startIndex` / `valueSpan.endIndex` in the file).
struct SlotSpan {
  std::string slot;
  std::size_t start = 0;
  std::size_t end = 0;
};

/// One example of a slot JSON file.
struct SlotExample {
  std::string text;                          ///< userInput.text
  std::vector<std::string> requested_slots;  ///< context.requestedSlots, file order
  std::vector<SlotSpan> labels;              ///< file order
  std::optional<std::string> id;             ///< DSTC8 only
  std::size_t index = 0;                     ///< 0-based record index in the file
};

/// Reads a slot JSON file (docs/dialoglue.md §4). `context`, `context.requestedSlots`, `labels` and
/// `id` are optional; other fields (`splitKey`) are ignored. A missing `startIndex` means 0
/// (C07); a missing `endIndex` is an error (DialoGLUE would default it to -1 and silently drop
/// the last character). Spans must satisfy 0 <= start < end <= text length in code points.
/// @throws SchemaError for a wrong JSON type (C08), e.g. `bad.json: record 0: field
///   'labels[0].valueSpan.startIndex': must be an integer, got string "3"`, or a missing required
///   field (`userInput`, `userInput.text`, `slot`, `valueSpan`); DataError for a missing
///   `endIndex`, a span outside the text, invalid JSON (line and column) or a read failure. All
///   name the file, "record N" (0-based) and the JSON path.
std::vector<SlotExample> read_slot_json(const std::string& path);

/// Reads DialoGLUE's slot `vocab.txt` (a JSON list of BIO tags, `O` first in practice), in file
/// order (which is arbitrary: it came from a Python set, C04).
/// @throws SchemaError (not a list of strings) / DataError (empty list, empty or duplicate tag,
///   invalid JSON) naming the file and the index, e.g. `[2]`.
std::vector<std::string> read_slot_vocab(const std::string& path);

/// Deterministic BIO vocabulary (C04): "O", then for each slot name of `labels` (requested
/// slots are not counted, as in DialoGLUE) in byte-sorted order "B-slot", "I-slot".
/// Independent of the order of `examples`. Never throws (except std::bad_alloc).
std::vector<std::string> build_slot_vocab(const std::vector<SlotExample>& examples);

}  // namespace dialtree::readers
