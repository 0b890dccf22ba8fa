#include "readers/slot_json.h"

#include <cstdint>
#include <set>
#include <unordered_set>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

namespace {

// One `labels[i]` entry of record `place`.
SlotSpan parse_label(const json& v, const JsonPlace& place, const std::string& path,
                     std::size_t text_len) {
  json_as_object(v, place, path);
  SlotSpan span;
  span.slot =
      json_as_string(json_require(v, "slot", place, path), place, json_child_path(path, "slot"));
  if (span.slot.empty()) {
    throw DataError(place.file, place.where, json_child_path(path, "slot"), "empty slot name");
  }
  const std::string vs_path = json_child_path(path, "valueSpan");
  const json& vs = json_as_object(json_require(v, "valueSpan", place, path), place, vs_path);

  // C07: DialoGLUE writes no startIndex when it is 0 (valueSpan.get('startIndex', 0)).
  std::int64_t start = 0;
  if (const json* s = json_find(vs, "startIndex", place, vs_path)) {
    start = json_as_int(*s, place, json_child_path(vs_path, "startIndex"));  // C08
  }
  const json* e = json_find(vs, "endIndex", place, vs_path);
  const std::string end_path = json_child_path(vs_path, "endIndex");
  if (!e) {
    // DialoGLUE would default it to -1 and silently drop the last character (C07).
    throw DataError(place.file, place.where, end_path,
                    "is missing (only startIndex may be omitted)");
  }
  std::int64_t end = json_as_int(*e, place, end_path);  // C08
  if (start < 0) {
    throw DataError(place.file, place.where, json_child_path(vs_path, "startIndex"),
                    "negative offset " + std::to_string(start));
  }
  if (end <= start || static_cast<std::uint64_t>(end) > text_len) {
    throw DataError(place.file, place.where, vs_path,
                    "span [" + std::to_string(start) + ", " + std::to_string(end) +
                        ") is not inside the text (need 0 <= start < end <= " +
                        std::to_string(text_len) + " code points)");
  }
  span.start = static_cast<std::size_t>(start);
  span.end = static_cast<std::size_t>(end);
  return span;
}

}  // namespace

std::vector<SlotExample> read_slot_json(const std::string& path) {
  const json root = json_parse_file(path);
  const json& list = json_as_array(root, JsonPlace{path, ""}, "(root)");
  std::vector<SlotExample> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& rec = list[i];
    const JsonPlace place{path, at_record(i)};
    json_as_object(rec, place, "(record)");
    SlotExample ex;
    ex.index = i;
    const json& input =
        json_as_object(json_require(rec, "userInput", place, ""), place, "userInput");
    ex.text =
        json_as_string(json_require(input, "text", place, "userInput"), place, "userInput.text");
    // An utterance with no text has nothing to tag; DialoGLUE has none (docs/failure-cases.md
    // B13, as B6 for intent CSVs).
    if (ex.text.find_first_not_of(" \t") == std::string::npos) {
      throw DataError(path, place.where, "userInput.text",
                      ex.text.empty() ? "empty text" : "the text is only blanks");
    }
    const std::size_t text_len = utf8::length(ex.text);  // JSON strings are valid UTF-8

    if (const json* ctx = json_find(rec, "context", place, "")) {
      json_as_object(*ctx, place, "context");
      if (const json* req = json_find(*ctx, "requestedSlots", place, "context")) {
        const std::string rpath = "context.requestedSlots";
        json_as_array(*req, place, rpath);
        for (std::size_t k = 0; k < req->size(); ++k) {
          ex.requested_slots.push_back(json_as_string((*req)[k], place, json_index_path(rpath, k)));
        }
      }
    }
    if (const json* labels = json_find(rec, "labels", place, "")) {
      json_as_array(*labels, place, "labels");
      for (std::size_t k = 0; k < labels->size(); ++k) {
        ex.labels.push_back(
            parse_label((*labels)[k], place, json_index_path("labels", k), text_len));
      }
    }
    if (const json* id = json_find(rec, "id", place, "")) {
      ex.id = json_as_string(*id, place, "id");
    }
    out.push_back(std::move(ex));
  }
  return out;
}

std::vector<std::string> read_slot_vocab(const std::string& path) {
  const json root = json_parse_file(path);
  const JsonPlace place{path, ""};
  const json& list = json_as_array(root, place, "(root)");
  std::vector<std::string> out;
  out.reserve(list.size());
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string p = json_index_path("", i);
    std::string tag = json_as_string(list[i], place, p);
    if (tag.empty()) throw DataError(path, "", p, "empty tag");
    if (!seen.insert(tag).second)
      throw DataError(path, "", p, "duplicate tag " + quote_for_message(tag));
    out.push_back(std::move(tag));
  }
  if (out.empty()) throw DataError(path, "", "", "tag list is empty");
  return out;
}

std::vector<std::string> build_slot_vocab(const std::vector<SlotExample>& examples) {
  std::set<std::string> slots;  // std::string compares bytes as unsigned char: byte order
  for (const SlotExample& ex : examples) {
    for (const SlotSpan& s : ex.labels) slots.insert(s.slot);
  }
  std::vector<std::string> out;
  out.reserve(1 + 2 * slots.size());
  out.push_back("O");
  for (const std::string& s : slots) {
    out.push_back("B-" + s);
    out.push_back("I-" + s);
  }
  return out;
}

}  // namespace dialtree::readers
