// MultiWOZ 2.1 in the TripPy/DialoGLUE layout (docs/dialoglue.md §6):
// `{train,val,test}_dials.json`, a dict dialogue-id -> {"goal", "log": [turns]}; turns alternate
// user/system; a turn is a system turn iff its `metadata` is non-empty, and that metadata holds the
// belief state after the preceding user turn.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree::readers {

/// One turn of a MultiWOZ log.
struct MultiwozTurn {
  std::string role;  ///< "user" or "system" (system iff `metadata` is non-empty)
  std::string text;  ///< verbatim; never delexicalised (C12)
  /// System turns: belief state after the preceding user turn, key -> value. Keys follow
  /// DialoGLUE/TripPy slot names, lower-cased: `metadata[d]["semi"][s]` gives "d-s" (e.g.
  /// "train-leaveat", "hotel-pricerange") and `metadata[d]["book"][s]` gives "d-book_s" (e.g.
  /// "hotel-book_people", "restaurant-book_time"). Values are kept verbatim (including
  /// "dontcare"), except that the time slots leaveat, arriveby and book_time go through
  /// normalize_time ("5:30pm" -> "17:30", C12). Values "" and "not mentioned" are omitted;
  /// `book.booked` is ignored. Every metadata domain is kept (also police, hospital, ...).
  /// Empty for user turns.
  std::map<std::string, std::string> belief;
};

/// One dialogue of a `*_dials.json` file.
struct MultiwozDialog {
  std::string id;  ///< e.g. "PMUL1635.json"
  std::vector<MultiwozTurn> turns;
};

/// Reads a `*_dials.json` file; dialogs in byte order of their ids (the JSON object's key
/// order). Roles come from `metadata` only; alternation is not enforced. `goal`, `dialog_act`
/// and `span_info` are not read.
/// @throws SchemaError (wrong JSON type or missing `log` / `text` / `metadata`, C08) /
///   DataError (invalid JSON, read failure) naming the file, "dialogue ID" and the JSON path,
///   e.g. `log[1].metadata.train.semi.leaveAt`.
std::vector<MultiwozDialog> read_multiwoz(const std::string& path);

/// Normalises a time value to 24-hour "HH:MM" (C12): "5:30pm" -> "17:30", "10:15" -> "10:15",
/// "12:15am" -> "00:15", "12:30pm" -> "12:30", "9.30" -> "09:30", "5 pm" -> "17:00".
/// Accepted: H or HH, optionally ':' or '.' and two minute digits, optionally (one space and)
/// am / pm / a.m. / p.m. in any case; surrounding spaces are ignored. With am/pm the hour must
/// be 1..12, without it 0..23 and minutes are required. Anything else ("dontcare", "24:00",
/// "after 5:30pm", "1530", "4.5") is returned unchanged. "4.50" does read as a time, so the
/// loader applies this to time slots only. Never throws (except std::bad_alloc).
std::string normalize_time(std::string_view value);

}  // namespace dialtree::readers
