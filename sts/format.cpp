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
  const std::size_t len = utf8::length(text);
  for (const auto& [domain, intents] : tree.domains) {
    for (const auto& [intent, slots] : intents) {
      for (const auto& [slot, values] : slots) {
        for (std::size_t k = 0; k < values.size(); ++k) {
          const Value& v = values[k];
          if (!v.span) continue;
          const std::string vpath =
              json_index_path(path + "." + domain + "." + intent + "." + slot, k) + ".span";
          auto [s, e] = *v.span;
          if (e > len) {
            throw DataError(place.file, place.where, vpath,
                            "span [" + std::to_string(s) + ", " + std::to_string(e) +
                                "] is beyond the text (" + std::to_string(len) + " characters)");
          }
          std::string cut = utf8::substr(text, s, e);
          if (cut != v.value) {
            throw DataError(place.file, place.where, vpath,
                            "text[" + std::to_string(s) + ":" + std::to_string(e) + "] is '" + cut +
                                "' but the value is '" + v.value + "'");
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
    throw DataError(file, place.where, "format",
                    "unsupported format '" + format + "' (this build reads " + kFormat + ")");
  }
  Dialog d;
  d.id = json_as_string(json_require(j, "id", place, ""), place, "id");
  d.source = json_as_string(json_require(j, "source", place, ""), place, "source");
  const nlohmann::json& turns = json_as_array(json_require(j, "turns", place, ""), place, "turns");
  for (std::size_t i = 0; i < turns.size(); ++i) {
    const std::string tpath = json_index_path("turns", i);
    const nlohmann::json& jt = json_as_object(turns[i], place, tpath);
    Turn t;
    t.role = json_as_string(json_require(jt, "role", place, tpath), place, tpath + ".role");
    if (t.role != "user" && t.role != "system") {
      throw DataError(file, place.where, tpath + ".role",
                      "must be \"user\" or \"system\", got \"" + t.role + "\"");
    }
    t.text = json_as_string(json_require(jt, "text", place, tpath), place, tpath + ".text");
    if (const nlohmann::json* jl = json_find(jt, "label", place, tpath); jl && !jl->is_null()) {
      t.label = tree_from_json(*jl, file, place.where, tpath + ".label");
      check_spans(*t.label, t.text, place, tpath + ".label");
    }
    if (const nlohmann::json* je = json_find(jt, "extra", place, tpath)) t.extra = *je;
    for (const auto& [key, _] : jt.items()) {
      if (key != "role" && key != "text" && key != "label" && key != "extra") {
        throw SchemaError(file, place.where, tpath + "." + key,
                          "unknown key (a turn has role, text, label, extra)");
      }
    }
    d.turns.push_back(std::move(t));
  }
  return d;
}

void write_jsonl(const std::string& path, const std::vector<Dialog>& dialogs) {
  AtomicFile f(path);
  for (const Dialog& d : dialogs) f.stream() << to_json(d).dump() << '\n';
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
