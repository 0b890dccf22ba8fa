#include "readers/sgd.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>
#include <unordered_map>

#include "common/error.h"
#include "common/json_util.h"
#include "common/simdjson_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

namespace {

namespace fs = std::filesystem;
namespace dom = simdjson::dom;

std::vector<std::string> string_list(dom::element v, const JsonPlace& place,
                                     const JsonPathRef& path) {
  const dom::array arr = sj_as_array(v, place, path);
  std::vector<std::string> out;
  out.reserve(arr.size());
  std::size_t i = 0;
  for (dom::element e : arr) {
    const JsonPathRef ep(path, i++);
    out.emplace_back(sj_as_string(e, place, ep));
  }
  return out;
}

// The string member `key` (found or not in the object at `path`).
std::string_view req_string(const std::optional<dom::element>& found, std::string_view key,
                            const JsonPlace& place, const JsonPathRef& path) {
  const JsonPathRef p(path, key);
  return sj_as_string(sj_require(found, key, place, path), place, p);
}

// The non-negative integer member `key` (found or not in the object at `path`).
std::size_t req_offset(const std::optional<dom::element>& found, std::string_view key,
                       const JsonPlace& place, const JsonPathRef& path) {
  const JsonPathRef p(path, key);
  std::int64_t v = sj_as_int(sj_require(found, key, place, path), place, p);
  if (v < 0) {
    throw DataError(place.file, place.where, p.str(), "negative offset " + std::to_string(v));
  }
  return static_cast<std::size_t>(v);
}

SgdAction parse_action(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  static constexpr std::array<std::string_view, 3> kKeys{"act", "slot", "values"};
  const auto m = sj_find_all(sj_as_object(v, place, path), kKeys);
  SgdAction a;
  a.act = req_string(m[0], kKeys[0], place, path);
  a.slot = req_string(m[1], kKeys[1], place, path);
  const JsonPathRef vpath(path, kKeys[2]);
  a.values = string_list(sj_require(m[2], kKeys[2], place, path), place, vpath);
  return a;
}

void parse_state(dom::element v, const JsonPlace& place, const JsonPathRef& path, SgdFrame& f) {
  static constexpr std::array<std::string_view, 3> kKeys{"active_intent", "requested_slots",
                                                         "slot_values"};
  const auto m = sj_find_all(sj_as_object(v, place, path), kKeys);
  f.active_intent = std::string(req_string(m[0], kKeys[0], place, path));
  const JsonPathRef rpath(path, kKeys[1]);
  f.requested_slots = string_list(sj_require(m[1], kKeys[1], place, path), place, rpath);
  const JsonPathRef sv_path(path, kKeys[2]);
  const dom::object sv = sj_as_object(sj_require(m[2], kKeys[2], place, path), place, sv_path);
  // Slots in name order, the last of a repeated name winning, as nlohmann's std::map-based
  // objects give them (this also decides which of two bad slots an error names).
  std::map<std::string_view, dom::element> by_slot;
  for (dom::key_value_pair kv : sv) by_slot[kv.key] = kv.value;
  for (const auto& [slot, values] : by_slot) {
    const JsonPathRef p(sv_path, slot);
    f.slot_values.emplace_hint(f.slot_values.end(), std::string(slot),
                               string_list(values, place, p));
  }
}

std::string quote_join(const std::vector<std::string>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i ? " / " : "") + quote_for_message(values[i]);
  return s;
}

// True if some action of `actions` gives a value for `slot` and none of them equals `text`
// (the C06 mismatch).
bool mismatches_actions(const std::vector<SgdAction>& actions, const std::string& slot,
                        std::string_view text) {
  bool any = false;
  for (const SgdAction& a : actions) {
    if (a.slot != slot) continue;
    for (const std::string& v : a.values) {
      if (v == text) return false;
      any = true;
    }
  }
  return any;
}

// Every value the frame's actions give for `slot`, in action order.
std::vector<std::string> action_values(const std::vector<SgdAction>& actions,
                                       const std::string& slot) {
  std::vector<std::string> values;
  for (const SgdAction& a : actions) {
    if (a.slot == slot) values.insert(values.end(), a.values.begin(), a.values.end());
  }
  return values;
}

// Where each dialogue id was first seen: "dialogues_001.json record 3".
using SeenIds = std::unordered_map<std::string, std::string>;

constexpr std::array<std::string_view, 3> kSgdDialogKeys{"dialogue_id", "services", "turns"};
constexpr std::array<std::string_view, 3> kSgdTurnKeys{"speaker", "utterance", "frames"};
constexpr std::array<std::string_view, 4> kSgdFrameKeys{"service", "actions", "state", "slots"};
constexpr std::array<std::string_view, 3> kSgdSlotKeys{"slot", "start", "exclusive_end"};

/// Parses each element of the required array member `key` of the object at `parent` (`found`
/// when present) with `parse_one(element, element_path)`, appending the results to `out` in
/// order. Throws DataError when the member is missing or not an array, and what `parse_one`
/// throws.
template <class T, class ParseOne>
void parse_sgd_list(const std::optional<dom::element>& found, std::string_view key,
                    const JsonPlace& place, const JsonPathRef& parent, std::vector<T>& out,
                    ParseOne&& parse_one) {
  const JsonPathRef list_path(parent, key);
  const dom::array list = sj_as_array(sj_require(found, key, place, parent), place, list_path);
  out.reserve(list.size());
  std::size_t i = 0;
  for (dom::element el : list) {
    const JsonPathRef p(list_path, i++);
    out.push_back(parse_one(el, p));
  }
}

/// What the frames of one SGD turn are read against: where the turn is, for messages and the
/// mismatch report, and the code point offsets of its utterance, computed on first use.
struct SgdTurnContext {
  const std::string& path;
  const JsonPlace& place;
  const std::string& file_name;
  const std::string& dialogue_id;
  std::size_t turn_index;
  SgdLoadReport* report;
  const SgdTurn& turn;
  // Code point offsets of the utterance (JSON strings are valid UTF-8), for the span checks.
  std::vector<std::size_t> cps;
  std::size_t utt_len = 0;
  bool have_cps = false;
};

/// The slot span object `sel` at `p`, its offsets in code points of the turn's utterance.
/// Throws DataError when a member is missing or of the wrong type, an offset is negative, or
/// the span is empty or not inside the utterance.
SgdSlotSpan parse_sgd_span(dom::element sel, const JsonPathRef& p, SgdTurnContext& ctx) {
  if (!ctx.have_cps) {
    ctx.cps = utf8::codepoint_offsets(ctx.turn.utterance);
    ctx.utt_len = ctx.cps.size() - 1;
    ctx.have_cps = true;
  }
  const auto sm = sj_find_all(sj_as_object(sel, ctx.place, p), kSgdSlotKeys);
  SgdSlotSpan span;
  span.slot = req_string(sm[0], kSgdSlotKeys[0], ctx.place, p);
  span.start = req_offset(sm[1], kSgdSlotKeys[1], ctx.place, p);
  span.end = req_offset(sm[2], kSgdSlotKeys[2], ctx.place, p);
  if (span.start >= span.end || span.end > ctx.utt_len) {
    throw DataError(ctx.path, ctx.place.where, JsonPathRef(p, "exclusive_end").str(),
                    "span [" + std::to_string(span.start) + ", " + std::to_string(span.end) +
                        ") is not inside the utterance (need start < exclusive_end <= " +
                        std::to_string(ctx.utt_len) + " code points)");
  }
  return span;
}

/// Reads the slot spans array `slots` at `spath` into `f.slots`, dropping (and reporting, when
/// ctx.report is set) each span whose text no action of the frame gives for its slot (C06).
/// Throws DataError as parse_sgd_span does.
void parse_sgd_slots(dom::array slots, const JsonPathRef& spath, SgdFrame& f,
                     SgdTurnContext& ctx) {
  std::size_t si = 0;
  for (dom::element sel : slots) {
    const JsonPathRef p(spath, si++);
    SgdSlotSpan span = parse_sgd_span(sel, p, ctx);
    // C06: the span text must equal one of the values the frame's actions give for this
    // slot; otherwise the span is dropped and reported, never kept silently.
    const std::string_view text = std::string_view(ctx.turn.utterance)
                                      .substr(ctx.cps[span.start],
                                              ctx.cps[span.end] - ctx.cps[span.start]);
    if (mismatches_actions(f.actions, span.slot, text)) {
      if (ctx.report) {
        ++ctx.report->value_mismatch;
        ctx.report->mismatches.push_back(
            ctx.file_name + ": dialogue " + ctx.dialogue_id + " turn " +
            std::to_string(ctx.turn_index) + ": slot " + span.slot + ": " +
            quote_for_message(text) + " vs " + quote_join(action_values(f.actions, span.slot)));
      }
      continue;
    }
    f.slots.push_back(std::move(span));
  }
}

/// The frame object `fel` at `fpath` of the turn in `ctx`. Throws DataError on a missing or
/// mistyped member, a service with an empty domain, a state on a SYSTEM turn, a USER frame
/// without a state, or a bad slot span.
SgdFrame parse_sgd_frame(dom::element fel, const JsonPathRef& fpath, SgdTurnContext& ctx) {
  const JsonPlace& place = ctx.place;
  const auto fm = sj_find_all(sj_as_object(fel, place, fpath), kSgdFrameKeys);
  SgdFrame f;
  f.service = req_string(fm[0], kSgdFrameKeys[0], place, fpath);
  if (sgd_service_domain(f.service).empty()) {
    throw DataError(ctx.path, place.where, JsonPathRef(fpath, kSgdFrameKeys[0]).str(),
                    "service " + quote_for_message(f.service) +
                        " gives an empty domain (a service is a name with an optional "
                        "version suffix, e.g. \"Restaurants_1\")");
  }

  parse_sgd_list(fm[1], kSgdFrameKeys[1], place, fpath, f.actions,
                 [&](dom::element ael, const JsonPathRef& p) {
                   return parse_action(ael, place, p);
                 });

  if (const std::optional<dom::element>& st = fm[2]) {
    const JsonPathRef stpath(fpath, kSgdFrameKeys[2]);
    if (ctx.turn.speaker != "USER") {
      throw DataError(ctx.path, place.where, stpath.str(),
                      "dialogue state on a SYSTEM turn (only user frames carry one)");
    }
    parse_state(*st, place, stpath, f);
  }

  const JsonPathRef spath(fpath, kSgdFrameKeys[3]);
  parse_sgd_slots(sj_as_array(sj_require(fm[3], kSgdFrameKeys[3], place, fpath), place, spath),
                  spath, f, ctx);
  // Every SGD user frame carries the dialogue state (its intent, requested slots and
  // values); without one the turn's label tree would silently lack its intent.
  if (ctx.turn.speaker == "USER" && !fm[2]) {
    throw DataError(ctx.path, place.where, JsonPathRef(fpath, kSgdFrameKeys[2]).str(),
                    "is missing: a USER frame carries the dialogue state (active_intent, "
                    "requested_slots, slot_values)");
  }
  return f;
}

/// The turn object `tel`, number `ti` at `tpath` of dialogue `dialogue_id` (at `place` of
/// `path`). Throws DataError on a missing or mistyped member, a speaker other than USER or
/// SYSTEM, a blank utterance, or a bad frame.
SgdTurn parse_sgd_turn(dom::element tel, std::size_t ti, const JsonPathRef& tpath,
                       const std::string& path, const JsonPlace& place,
                       const std::string& file_name, const std::string& dialogue_id,
                       SgdLoadReport* report) {
  const auto tm = sj_find_all(sj_as_object(tel, place, tpath), kSgdTurnKeys);
  SgdTurn t;
  t.speaker = req_string(tm[0], kSgdTurnKeys[0], place, tpath);
  if (t.speaker != "USER" && t.speaker != "SYSTEM") {
    throw DataError(path, place.where, JsonPathRef(tpath, "speaker").str(),
                    "must be \"USER\" or \"SYSTEM\", got " + quote_for_message(t.speaker));
  }
  t.utterance = req_string(tm[1], kSgdTurnKeys[1], place, tpath);
  // A turn with no text says nothing; SGD has none (docs/failure-cases.md B13, as B6).
  if (t.utterance.find_first_not_of(" \t") == std::string::npos) {
    throw DataError(path, place.where, JsonPathRef(tpath, "utterance").str(),
                    t.utterance.empty() ? "empty text" : "the text is only blanks");
  }
  SgdTurnContext ctx{path, place, file_name, dialogue_id, ti, report, t};
  parse_sgd_list(tm[2], kSgdTurnKeys[2], place, tpath, t.frames,
                 [&](dom::element fel, const JsonPathRef& fpath) {
                   return parse_sgd_frame(fel, fpath, ctx);
                 });
  return t;
}

/// The dialogue object `dj` (record `di` of `path`), its id recorded in `seen`. Counts its
/// turns in `report` when set. Throws DataError on a missing or mistyped member, a dialogue id
/// already seen, a bad turn, or a dialogue with no turn.
SgdDialog parse_sgd_dialog(dom::element dj, std::size_t di, const std::string& path,
                           const std::string& file_name, SgdLoadReport* report,
                           SeenIds& seen) {
  JsonPlace place{path, at_record(di)};
  const JsonPathRef top("(record)");
  const auto dm = sj_find_all(sj_as_object(dj, place, top), kSgdDialogKeys);
  SgdDialog d;
  d.dialogue_id = req_string(dm[0], kSgdDialogKeys[0], place, top);
  // sts ids are "<source>/<dialogue_id>": a repeated id would silently make two the same.
  if (auto [it, fresh] = seen.emplace(d.dialogue_id, file_name + " " + place.where); !fresh) {
    throw DataError(path, place.where, "dialogue_id",
                    "duplicate dialogue id " + quote_for_message(d.dialogue_id) + " (first at " +
                        it->second + ")");
  }
  place.where += " (dialogue " + d.dialogue_id + ")";
  const JsonPathRef services_path(top, kSgdDialogKeys[1]);
  d.services =
      string_list(sj_require(dm[1], kSgdDialogKeys[1], place, top), place, services_path);
  std::size_t turn_no = 0;
  parse_sgd_list(dm[2], kSgdDialogKeys[2], place, top, d.turns,
                 [&](dom::element tel, const JsonPathRef& tpath) {
                   return parse_sgd_turn(tel, turn_no++, tpath, path, place, file_name,
                                         d.dialogue_id, report);
                 });
  if (d.turns.empty()) {
    throw DataError(path, place.where, JsonPathRef(top, kSgdDialogKeys[2]).str(),
                    "a dialogue with no turn");
  }
  if (report) {
    ++report->dialogs;
    report->turns += d.turns.size();
  }
  return d;
}

std::vector<SgdDialog> read_file(const std::string& path, SgdLoadReport* report,
                                 SjFileParser& parser, SeenIds& seen) {
  const dom::element root = parser.parse(path);
  const JsonPathRef root_path("(root)");
  const dom::array list = sj_as_array(root, JsonPlace{path, ""}, root_path);
  const std::string file_name = fs::path(path).filename().string();
  std::vector<SgdDialog> out;
  out.reserve(list.size());
  std::size_t di = 0;
  for (dom::element dj : list) {
    out.push_back(parse_sgd_dialog(dj, di++, path, file_name, report, seen));
  }
  return out;
}

}  // namespace

std::string sgd_service_domain(const std::string& service) {
  // "Restaurants_1" -> "Restaurants": versions of one service share their semantics.
  const std::size_t u = service.rfind('_');
  if (u != std::string::npos && u + 1 < service.size() &&
      service.find_first_not_of("0123456789", u + 1) == std::string::npos) {
    return service.substr(0, u);
  }
  return service;
}

std::vector<SgdDialog> read_sgd_file(const std::string& path, SgdLoadReport* report) {
  SjFileParser parser;
  SeenIds seen;
  return read_file(path, report, parser, seen);
}

std::vector<SgdDialog> read_sgd(const std::string& path, SgdLoadReport* report) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return read_sgd_file(path, report);
  if (!fs::is_directory(path, ec)) {
    throw DataError(path, "", "", "no such file or directory");
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("dialogues_", 0) == 0 && name.size() > 15 &&
        name.compare(name.size() - 5, 5, ".json") == 0) {
      files.push_back(e.path().string());
    }
  }
  if (ec) throw DataError(path, "", "", "cannot list directory: " + ec.message());
  if (files.empty()) throw DataError(path, "", "", "no dialogues_*.json file in this directory");
  std::sort(files.begin(), files.end());
  SjFileParser parser;  // reused: its buffers grow to the largest file once
  SeenIds seen;         // dialogue ids must be unique across the files too
  std::vector<SgdDialog> out;
  for (const std::string& f : files) {
    std::vector<SgdDialog> part = read_file(f, report, parser, seen);
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

}  // namespace dialtree::readers
