// The `sts/1` JSON-lines format: one dialog per line (docs/sts-format.md).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sts/tree.h"

namespace dialtree::sts {

/// Format tag written in every record.
inline constexpr const char* kFormat = "sts/1";

/// One utterance.
struct Turn {
  std::string role;  ///< "user" or "system"
  std::string text;  ///< valid UTF-8
  /// Label tree; std::nullopt = unlabelled turn. An empty tree is a *labelled* turn whose label
  /// is empty after fix-up (it scores 0 against every other tree).
  std::optional<Tree> label;
  /// Source-specific extras kept verbatim (e.g. {"requested_slots": [...]}); null if none.
  nlohmann::json extra;
};

/// One dialog: an id unique within its file, the source dataset name and the turns in order.
struct Dialog {
  std::string id;      ///< e.g. "banking/train/17"
  std::string source;  ///< e.g. "banking", "sgd"
  std::vector<Turn> turns;
};

/// The record of one dialog, keys in the documented order: format, id, source, turns; each
/// turn: role, text, label (if labelled), extra (if any).
nlohmann::ordered_json to_json(const Dialog& dialog);
/// Parses one record. @throws SchemaError / DataError naming `file`, "line N" and the path
///   (e.g. "turns[1].role must be \"user\" or \"system\"", unknown format tag, invalid span).
Dialog dialog_from_json(const nlohmann::json& j, const std::string& file = "",
                        std::size_t line = 0);

/// Parses one turn object {"role", "text", "label"?, "extra"?} found at JSON path `path` ("" for
/// a whole document; errors then name "role", "text", "label...") of `file` at `where` ("line
/// N"). The label is checked against the text: every span must lie inside it and cut out exactly
/// its value. With `require_role` false a missing role reads as "user" (for a single turn given
/// on its own, e.g. to `dialtree sts score`).
/// @throws SchemaError / DataError naming the file, the place and the JSON path.
Turn turn_from_json(const nlohmann::json& j, const std::string& file, const std::string& where,
                    const std::string& path, bool require_role = true);

/// Writes dialogs as sts/1 JSONL to `path` atomically (temp + rename; see common/atomic_file.h
/// for how links and non-regular targets are handled).
/// @throws std::invalid_argument for a refused target; std::runtime_error on I/O failure.
void write_jsonl(const std::string& path, const std::vector<Dialog>& dialogs);
/// Writes dialogs as sts/1 JSONL to `out` (one compact record and LF per dialog).
void write_jsonl(std::ostream& out, const std::vector<Dialog>& dialogs);
/// Streams a JSONL file: calls `fn` for every dialog. @throws DataError naming the line.
void for_each_dialog(const std::string& path, const std::function<void(Dialog&&)>& fn);
/// Reads a whole JSONL file. @throws DataError naming the line.
std::vector<Dialog> read_jsonl(const std::string& path);

}  // namespace dialtree::sts
