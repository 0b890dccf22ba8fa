// Schema-Guided Dialogue (SGD / DSTC8) dialog files: `dialogues_NNN.json`, a JSON list of
// `{"dialogue_id", "services", "turns":[{"speaker","utterance","frames":[...]}]}`.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dialtree::readers {

/// A slot mention in the utterance: code point offsets [start, end) (`start`, `exclusive_end`
/// in the file; Python str indices).
struct SgdSlotSpan {
  std::string slot;
  std::size_t start = 0;
  std::size_t end = 0;
};

/// One dialogue act of a frame.
struct SgdAction {
  std::string act;                  ///< INFORM, REQUEST, INFORM_INTENT, ...
  std::string slot;                 ///< may be "" (e.g. GOODBYE) or "intent"
  std::vector<std::string> values;  ///< as spoken
};

/// The annotation of one service in one turn.
struct SgdFrame {
  std::string service;             ///< e.g. "Restaurants_1"
  std::vector<SgdSlotSpan> slots;  ///< spans kept by the C06 check, file order
  std::vector<SgdAction> actions;
  /// User turns only (`state`): active intent ("NONE" when none; std::nullopt when the frame
  /// has no state, i.e. on SYSTEM turns), requested slots, and the cumulative slot values of
  /// the dialogue state (slot -> values, as in the file).
  std::optional<std::string> active_intent;
  std::vector<std::string> requested_slots;
  std::map<std::string, std::vector<std::string>> slot_values;
};

/// One turn of a dialogue.
struct SgdTurn {
  std::string speaker;           ///< "USER" or "SYSTEM"
  std::string utterance;         ///< verbatim
  std::vector<SgdFrame> frames;  ///< one per service touched by the turn, file order
};

/// One dialogue, turns in file order.
struct SgdDialog {
  std::string dialogue_id;            ///< e.g. "1_00000"
  std::vector<std::string> services;  ///< e.g. {"Restaurants_1"}
  std::vector<SgdTurn> turns;
};

/// What loading found wrong but could recover from (docs/failure-cases.md C06). For each slot span
/// of a frame, the text `utterance[start:exclusive_end]` (code points) is compared byte-exactly
/// with every value that the same frame's actions give for that slot (INFORM, OFFER, CONFIRM,
/// REQUEST, SELECT, ... all count). If there are such values and none is equal (e.g.
/// `Hartsfield-Jackson` in the utterance vs `Hartsfield–Jackson` with an en dash in the
/// annotation), the span is dropped from `SgdFrame::slots` and counted here, never silently kept.
/// There is no lenient (NFKC / dash-folding) comparison. A span whose slot has no action value is
/// kept unchecked. Counters accumulate over calls that share one report (read_sgd passes it to
/// every file).
struct SgdLoadReport {
  std::size_t dialogs = 0;         ///< dialogues read
  std::size_t turns = 0;           ///< turns read (user + system)
  std::size_t value_mismatch = 0;  ///< spans dropped by the C06 check
  /// One line per dropped span: "file: dialogue D turn T: slot S: 'x' vs 'y' / 'z'" (file name
  /// without directory, T 0-based, x the utterance text, y, z the action values).
  std::vector<std::string> mismatches;
};

/// Reads one SGD dialogue file (a JSON list of dialogues). Required per frame: `service`,
/// `actions` (`act`, `slot`, `values`; `canonical_values` and other fields are ignored) and
/// `slots` (`slot`, `start`, `exclusive_end`); `state` is optional and allowed on USER turns only;
/// `speaker` must be "USER" or "SYSTEM". Spans are checked as described at SgdLoadReport (C06);
/// `report` may be null (mismatching spans are still dropped).
/// @throws DataError for a span with start < 0, start >= exclusive_end or exclusive_end past the
///   utterance length in code points, a `state` on a SYSTEM turn, a bad speaker, a frame
///   `service` whose domain (sgd_service_domain) is empty ("", "_1"), a `dialogue_id` that
///   occurs twice (naming the id and where it was first seen), invalid JSON; SchemaError for a
///   missing field or a wrong JSON type (C08). Messages name the file, "record N (dialogue ID)"
///   (N = 0-based dialogue index) and the JSON path, e.g.
///   `turns[3].frames[0].slots[1].exclusive_end`.
std::vector<SgdDialog> read_sgd_file(const std::string& path, SgdLoadReport* report = nullptr);

/// Reads every `dialogues_*.json` of a directory in byte order of the names (schema.json and any
/// other file is skipped), or a single file if `path` is a file; dialogues are concatenated.
/// Dialogue ids must be unique across all the files.
/// @throws DataError if `path` does not exist or the directory has no dialogues_*.json file, for
///   a dialogue id already seen in this or an earlier file ("duplicate dialogue id '1_00000'
///   (first at dialogues_001.json record 3)"), and whatever read_sgd_file throws.
std::vector<SgdDialog> read_sgd(const std::string& path, SgdLoadReport* report = nullptr);

/// The domain of an SGD service: the name without its numeric version suffix ("Restaurants_1"
/// -> "Restaurants"; "Banks" stays "Banks"). Versions of one service share their semantics.
/// Empty for "" and "_1", which the readers reject.
std::string sgd_service_domain(const std::string& service);

}  // namespace dialtree::readers
