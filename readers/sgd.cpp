#include "readers/sgd.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> string_list(const json& v, const JsonPlace& place,
                                     const std::string& path) {
  json_as_array(v, place, path);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(json_as_string(v[i], place, json_index_path(path, i)));
  }
  return out;
}

std::string req_string(const json& obj, const char* key, const JsonPlace& place,
                       const std::string& path) {
  return json_as_string(json_require(obj, key, place, path), place, json_child_path(path, key));
}

std::size_t req_offset(const json& obj, const char* key, const JsonPlace& place,
                       const std::string& path) {
  const std::string p = json_child_path(path, key);
  std::int64_t v = json_as_int(json_require(obj, key, place, path), place, p);
  if (v < 0) throw DataError(place.file, place.where, p, "negative offset " + std::to_string(v));
  return static_cast<std::size_t>(v);
}

SgdAction parse_action(const json& v, const JsonPlace& place, const std::string& path) {
  json_as_object(v, place, path);
  SgdAction a;
  a.act = req_string(v, "act", place, path);
  a.slot = req_string(v, "slot", place, path);
  a.values =
      string_list(json_require(v, "values", place, path), place, json_child_path(path, "values"));
  return a;
}

void parse_state(const json& v, const JsonPlace& place, const std::string& path, SgdFrame& f) {
  json_as_object(v, place, path);
  f.active_intent = req_string(v, "active_intent", place, path);
  f.requested_slots = string_list(json_require(v, "requested_slots", place, path), place,
                                  json_child_path(path, "requested_slots"));
  const std::string sv_path = json_child_path(path, "slot_values");
  const json& sv = json_as_object(json_require(v, "slot_values", place, path), place, sv_path);
  for (auto it = sv.begin(); it != sv.end(); ++it) {
    f.slot_values[it.key()] = string_list(it.value(), place, json_child_path(sv_path, it.key()));
  }
}

std::string quote_join(const std::vector<std::string>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? " / '" : "'") + values[i] + "'";
  return s;
}

}  // namespace

std::vector<SgdDialog> read_sgd_file(const std::string& path, SgdLoadReport* report) {
  const json root = json_parse_file(path);
  const json& list = json_as_array(root, JsonPlace{path, ""}, "(root)");
  const std::string file_name = fs::path(path).filename().string();
  std::vector<SgdDialog> out;
  out.reserve(list.size());
  for (std::size_t di = 0; di < list.size(); ++di) {
    const json& dj = list[di];
    JsonPlace place{path, at_record(di)};
    json_as_object(dj, place, "(record)");
    SgdDialog d;
    d.dialogue_id = req_string(dj, "dialogue_id", place, "");
    place.where += " (dialogue " + d.dialogue_id + ")";
    d.services = string_list(json_require(dj, "services", place, ""), place, "services");
    const json& turns = json_as_array(json_require(dj, "turns", place, ""), place, "turns");
    d.turns.reserve(turns.size());
    for (std::size_t ti = 0; ti < turns.size(); ++ti) {
      const std::string tpath = json_index_path("turns", ti);
      const json& tj = json_as_object(turns[ti], place, tpath);
      SgdTurn t;
      t.speaker = req_string(tj, "speaker", place, tpath);
      if (t.speaker != "USER" && t.speaker != "SYSTEM") {
        throw DataError(path, place.where, json_child_path(tpath, "speaker"),
                        "must be \"USER\" or \"SYSTEM\", got \"" + t.speaker + "\"");
      }
      t.utterance = req_string(tj, "utterance", place, tpath);
      const std::size_t utt_len = utf8::length(t.utterance);  // JSON strings are valid UTF-8
      const std::string fspath = json_child_path(tpath, "frames");
      const json& frames = json_as_array(json_require(tj, "frames", place, tpath), place, fspath);
      for (std::size_t fi = 0; fi < frames.size(); ++fi) {
        const std::string fpath = json_index_path(fspath, fi);
        const json& fj = json_as_object(frames[fi], place, fpath);
        SgdFrame f;
        f.service = req_string(fj, "service", place, fpath);

        const std::string apath = json_child_path(fpath, "actions");
        const json& actions =
            json_as_array(json_require(fj, "actions", place, fpath), place, apath);
        for (std::size_t ai = 0; ai < actions.size(); ++ai) {
          f.actions.push_back(parse_action(actions[ai], place, json_index_path(apath, ai)));
        }

        if (const json* st = json_find(fj, "state", place, fpath)) {
          if (t.speaker != "USER") {
            throw DataError(path, place.where, json_child_path(fpath, "state"),
                            "dialogue state on a SYSTEM turn (only user frames carry one)");
          }
          parse_state(*st, place, json_child_path(fpath, "state"), f);
        }

        const std::string spath = json_child_path(fpath, "slots");
        const json& slots = json_as_array(json_require(fj, "slots", place, fpath), place, spath);
        for (std::size_t si = 0; si < slots.size(); ++si) {
          const std::string p = json_index_path(spath, si);
          const json& sj = json_as_object(slots[si], place, p);
          SgdSlotSpan span;
          span.slot = req_string(sj, "slot", place, p);
          span.start = req_offset(sj, "start", place, p);
          span.end = req_offset(sj, "exclusive_end", place, p);
          if (span.start >= span.end || span.end > utt_len) {
            throw DataError(path, place.where, json_child_path(p, "exclusive_end"),
                            "span [" + std::to_string(span.start) + ", " +
                                std::to_string(span.end) +
                                ") is not inside the utterance (need start < exclusive_end <= " +
                                std::to_string(utt_len) + " code points)");
          }
          // C06: the span text must equal one of the values the frame's actions give for this
          // slot; otherwise the span is dropped and reported, never kept silently.
          std::vector<std::string> values;
          for (const SgdAction& a : f.actions) {
            if (a.slot == span.slot) values.insert(values.end(), a.values.begin(), a.values.end());
          }
          const std::string text = utf8::substr(t.utterance, span.start, span.end);
          if (!values.empty() && std::find(values.begin(), values.end(), text) == values.end()) {
            if (report) {
              ++report->value_mismatch;
              report->mismatches.push_back(file_name + ": dialogue " + d.dialogue_id + " turn " +
                                           std::to_string(ti) + ": slot " + span.slot + ": '" +
                                           text + "' vs " + quote_join(values));
            }
            continue;
          }
          f.slots.push_back(std::move(span));
        }
        t.frames.push_back(std::move(f));
      }
      d.turns.push_back(std::move(t));
    }
    if (report) {
      ++report->dialogs;
      report->turns += d.turns.size();
    }
    out.push_back(std::move(d));
  }
  return out;
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
  std::vector<SgdDialog> out;
  for (const std::string& f : files) {
    std::vector<SgdDialog> part = read_sgd_file(f, report);
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

}  // namespace dialtree::readers
