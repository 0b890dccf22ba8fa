#include "sts/format.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::sts {

nlohmann::ordered_json to_json(const Dialog& dialog) {
  nlohmann::ordered_json rec;
  rec["format"] = kFormat;
  rec["id"] = dialog.id;
  rec["source"] = dialog.source;
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();
  for (const Turn& t : dialog.turns) {
    nlohmann::ordered_json jt;
    jt["role"] = t.role;
    jt["text"] = t.text;
    if (t.label) jt["label"] = to_json(*t.label);
    if (!t.extra.is_null()) jt["extra"] = nlohmann::ordered_json(t.extra);
    turns.push_back(std::move(jt));
  }
  rec["turns"] = std::move(turns);
  return rec;
}

namespace {
// Spans must lie inside the text and cut out exactly the value string.
void check_spans(const Tree& tree, const std::string& text, const JsonPlace& place,
                 const std::string& path) {
  std::vector<std::size_t> offsets;  // code point -> byte offset, computed on first use
  std::size_t len = 0;
  for (const auto& [domain, intents] : tree.domains) {
    for (const auto& [intent, slots] : intents) {
      for (const auto& [slot, values] : slots) {
        for (std::size_t k = 0; k < values.size(); ++k) {
          const Value& v = values[k];
          if (!v.span) continue;
          const std::string vpath =
              json_index_path(path + "." + domain + "." + intent + "." + slot, k) + ".span";
          auto [s, e] = *v.span;
          if (offsets.empty()) {
            offsets = utf8::codepoint_offsets(text);  // text is valid UTF-8 (a JSON string)
            len = offsets.size() - 1;
          }
          if (e > len) {
            throw DataError(place.file, place.where, vpath,
                            "span [" + std::to_string(s) + ", " + std::to_string(e) +
                                "] is beyond the text (" + std::to_string(len) + " characters)");
          }
          const std::string_view cut =
              std::string_view(text).substr(offsets[s], offsets[e] - offsets[s]);
          if (cut != v.value) {
            throw DataError(place.file, place.where, vpath,
                            "text[" + std::to_string(s) + ":" + std::to_string(e) + "] is " +
                                quote_for_message(cut) + " but the value is " +
                                quote_for_message(v.value));
          }
        }
      }
    }
  }
}
}  // namespace

Dialog dialog_from_json(const nlohmann::json& j, const std::string& file, std::size_t line) {
  const JsonPlace place{file, line ? at_line(line) : std::string()};
  const std::string format = json_as_string(json_require(j, "format", place, ""), place, "format");
  if (format != kFormat) {
    throw DataError(
        file, place.where, "format",
        "unsupported format " + quote_for_message(format) + " (this build reads " + kFormat + ")");
  }
  Dialog d;
  d.id = json_as_string(json_require(j, "id", place, ""), place, "id");
  d.source = json_as_string(json_require(j, "source", place, ""), place, "source");
  const nlohmann::json& turns = json_as_array(json_require(j, "turns", place, ""), place, "turns");
  for (std::size_t i = 0; i < turns.size(); ++i) {
    d.turns.push_back(turn_from_json(turns[i], file, place.where, json_index_path("turns", i)));
  }
  return d;
}

Turn turn_from_json(const nlohmann::json& j, const std::string& file, const std::string& where,
                    const std::string& path, bool require_role) {
  const JsonPlace place{file, where};
  const auto child = [&](const char* key) { return json_child_path(path, key); };
  const nlohmann::json& jt = json_as_object(j, place, path.empty() ? "(root)" : path);
  Turn t;
  if (const nlohmann::json* jr = json_find(jt, "role", place, path); jr || require_role) {
    t.role = json_as_string(jr ? *jr : json_require(jt, "role", place, path), place, child("role"));
    if (t.role != "user" && t.role != "system") {
      throw DataError(file, where, child("role"),
                      "must be \"user\" or \"system\", got " + quote_for_message(t.role));
    }
  } else {
    t.role = "user";
  }
  t.text = json_as_string(json_require(jt, "text", place, path), place, child("text"));
  if (const nlohmann::json* jl = json_find(jt, "label", place, path); jl && !jl->is_null()) {
    t.label = tree_from_json(*jl, file, where, child("label"));
    check_spans(*t.label, t.text, place, child("label"));
  }
  if (const nlohmann::json* je = json_find(jt, "extra", place, path)) t.extra = *je;
  for (const auto& [key, _] : jt.items()) {
    if (key != "role" && key != "text" && key != "label" && key != "extra") {
      throw SchemaError(file, where, child(key.c_str()),
                        "unknown key (a turn has role, text, label, extra)");
    }
  }
  return t;
}

void write_jsonl(std::ostream& out, const std::vector<Dialog>& dialogs) {
  for (const Dialog& d : dialogs) out << to_json(d).dump() << '\n';
}

void write_jsonl(const std::string& path, const std::vector<Dialog>& dialogs) {
  AtomicFile f(path);
  write_jsonl(f.stream(), dialogs);
  f.commit();
}

void for_each_dialog(const std::string& path, const std::function<void(Dialog&&)>& fn) {
  json_for_each_line(path, [&](std::size_t line, const nlohmann::json& j) {
    fn(dialog_from_json(j, path, line));
  });
}

std::vector<Dialog> read_jsonl(const std::string& path) {
  std::vector<Dialog> out;
  for_each_dialog(path, [&](Dialog&& d) { out.push_back(std::move(d)); });
  return out;
}

}  // namespace dialtree::sts
