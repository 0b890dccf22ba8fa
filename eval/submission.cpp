#include "eval/submission.h"

#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"

namespace dialtree::eval {

namespace {

// "must be <expected>, got <type>" for entry `index` of a submission list.
[[noreturn]] void bad_entry(const std::string& file, std::size_t index, const std::string& field,
                            const json& v, const char* expected) {
  std::string got = json_type_name(v);
  if (v.is_string()) got += " " + quote_for_message(v.get_ref<const std::string&>(), 60);
  throw SchemaError(file, at_record(index), field,
                    std::string("must be ") + expected + ", got " + got);
}

const json& require_array(const json& list, const std::string& file, const char* what) {
  if (!list.is_array()) {
    throw SchemaError(
        file, "", "",
        std::string("must be a JSON list of ") + what + ", got " + json_type_name(list));
  }
  return list;
}

std::vector<std::string> strings_of(const json& v, const std::string& file, std::size_t index,
                                    const std::string& field, const char* expected) {
  if (!v.is_array()) bad_entry(file, index, field, v, expected);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (!v[k].is_string())
      bad_entry(file, index, field + "[" + std::to_string(k) + "]", v[k], "a string");
    out.push_back(v[k].get<std::string>());
  }
  return out;
}

void check_counts(std::size_t predicted, std::size_t gold, Task task,
                  const std::string& predictions_file, const std::string& gold_file) {
  if (predicted != gold) {
    throw DataError(predictions_file, "", "",
                    "has " + std::to_string(predicted) + " " + task_key(task) +
                        " predictions but " + gold_file + " has " + std::to_string(gold) +
                        " gold examples; the counts and order must match the test file");
  }
  if (gold == 0) throw DataError(gold_file, "", task_key(task), "holds no gold examples");
}

[[noreturn]] void no_multiwoz_gold() {
  throw std::invalid_argument(
      "gt_test.json has no MultiWOZ gold: TripPy's prediction file (pred_res.test.final.json) "
      "carries its own gold values; score it with score_trippy_file");
}

}  // namespace

Task parse_task(std::string_view name) {
  if (const readers::DialoglueTaskInfo* row = readers::find_dialoglue_task(name)) return row->task;
  throw std::invalid_argument("unknown DialoGLUE task " + quote_for_message(name) +
                              "; expected one of " +
                              readers::join_dialoglue_task_names(
                                  readers::TaskSet::All, readers::TaskSpelling::NameAndFolder));
}

std::vector<std::string> task_names() {
  return readers::dialoglue_task_names(readers::TaskSet::All, readers::TaskSpelling::NameAndFolder);
}

std::string task_key(Task task) {
  return std::string(readers::dialoglue_task(task).name);
}
TaskKind task_kind(Task task) {
  return readers::dialoglue_task(task).family;
}
std::string metric_name(Task task) {
  return std::string(readers::dialoglue_task(task).metric);
}

const json& task_list(const json& root, Task task, const std::string& file) {
  if (root.is_array()) return root;
  if (root.is_object()) {
    const auto it = root.find(task_key(task));
    if (it == root.end()) {
      throw SchemaError(file, "", task_key(task),
                        "is missing (the file is a JSON object, so it must hold the task's list "
                        "under key \"" +
                            task_key(task) + "\")");
    }
    if (!it->is_array()) {
      throw SchemaError(file, "", task_key(task), "must be a list, got " + json_type_name(*it));
    }
    return *it;
  }
  throw SchemaError(file, "", "",
                    "must be a JSON list of " + task_key(task) +
                        " predictions or an object keyed by task, got " + json_type_name(root));
}

std::vector<std::string> intent_labels_from_json(const json& list, const std::string& file) {
  require_array(list, file, "label strings");
  std::vector<std::string> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) bad_entry(file, i, "", list[i], "a string");
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

std::vector<SpanList> span_lists_from_json(const json& list, const std::string& file) {
  require_array(list, file, "span lists");
  std::vector<SpanList> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.push_back(strings_of(list[i], file, i, "", "a list of strings"));
  }
  return out;
}

std::vector<TopParse> top_parses_from_json(const json& list, const std::string& file) {
  require_array(list, file, "[intent, [tags]] pairs");
  std::vector<TopParse> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& v = list[i];
    if (!v.is_array() || v.size() != 2) {
      if (v.is_array()) {
        throw SchemaError(
            file, at_record(i), "",
            "must be a list [intent, [tags]] of 2 elements, got " + std::to_string(v.size()));
      }
      bad_entry(file, i, "", v, "a list [intent, [tags]]");
    }
    if (!v[0].is_string()) bad_entry(file, i, "[0]", v[0], "an intent string");
    TopParse p;
    p.intent = v[0].get<std::string>();
    p.tags = strings_of(v[1], file, i, "[1]", "a list of tag strings");
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<TripPyTurn> trippy_turns_from_json(const json& list,
                                               const std::vector<std::string>& slots,
                                               const std::string& file) {
  require_array(list, file, "TripPy prediction records");
  std::vector<TripPyTurn> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& rec = list[i];
    const JsonPlace place{file, at_record(i)};
    json_as_object(rec, place, "(record)");
    TripPyTurn turn;
    const json& guid = json_require(rec, "guid", place, "");
    if (guid.is_string()) {
      const std::string g = guid.get<std::string>();
      std::size_t start = 0;
      for (std::size_t dash; (dash = g.find('-', start)) != std::string::npos; start = dash + 1) {
        turn.guid.push_back(g.substr(start, dash - start));
      }
      turn.guid.push_back(g.substr(start));
    } else {
      turn.guid = strings_of(guid, file, i, "guid", "a list of strings");
    }
    for (const auto& slot : slots) {
      TripPySlotPrediction sp;
      const auto field = [&](const char* prefix) -> const json& {
        return json_require(rec, prefix + slot, place, "");
      };
      sp.class_label_id =
          static_cast<int>(json_as_int(field("class_label_id_"), place, "class_label_id_" + slot));
      sp.class_prediction = static_cast<int>(
          json_as_int(field("class_prediction_"), place, "class_prediction_" + slot));
      sp.slot_groundtruth =
          json_as_string(field("slot_groundtruth_"), place, "slot_groundtruth_" + slot);
      sp.slot_prediction =
          json_as_string(field("slot_prediction_"), place, "slot_prediction_" + slot);
      turn.slots.emplace(slot, std::move(sp));
    }
    out.push_back(std::move(turn));
  }
  return out;
}

TripPyConfig read_trippy_config(const std::string& path) {
  const json root = json_parse_file(path);
  const JsonPlace place{path, ""};
  json_as_object(root, place, "(root)");
  TripPyConfig cfg;
  const auto strings = [&](const char* key) {
    const json& a = json_as_array(json_require(root, key, place, ""), place, key);
    std::vector<std::string> out;
    for (std::size_t k = 0; k < a.size(); ++k) {
      out.push_back(json_as_string(a[k], place, json_index_path(key, k)));
    }
    return out;
  };
  cfg.class_types = strings("class_types");
  cfg.slots = strings("slots");
  const json& maps =
      json_as_object(json_require(root, "label_maps", place, ""), place, "label_maps");
  std::map<std::string, std::vector<std::string>> raw;
  for (const auto& [key, variants] : maps.items()) {
    const std::string vpath = json_child_path("label_maps", key);
    json_as_array(variants, place, vpath);
    std::vector<std::string> vs;
    for (std::size_t k = 0; k < variants.size(); ++k) {
      vs.push_back(json_as_string(variants[k], place, json_index_path(vpath, k)));
    }
    raw[key] = std::move(vs);
  }
  cfg.label_maps = normalize_label_maps(raw);
  return cfg;
}

json intent_submission_json(const std::vector<std::string>& labels) {
  return json(labels);
}

json slot_submission_json(const std::vector<SpanList>& spans) {
  return json(spans);
}

json top_submission_json(const std::vector<TopParse>& parses) {
  json out = json::array();
  for (const auto& p : parses) out.push_back(json::array({p.intent, p.tags}));
  return out;
}

void write_submission(const std::string& path, const json& submission) {
  write_file_atomic(path, submission.dump() + "\n");
}

namespace {

// "N of M <what> (first: record I, <example>) <why>", or nothing when N is 0.
void warn_count(std::vector<std::string>& warnings, std::size_t bad, std::size_t total,
                std::size_t first, const std::string& example, const std::string& what,
                const std::string& why) {
  if (bad == 0) return;
  warnings.push_back(std::to_string(bad) + " of " + std::to_string(total) + " " + what +
                     " (first: record " + std::to_string(first) + ", " + example + ") " + why);
}

std::vector<std::string> intent_warnings(const std::vector<std::string>& predicted,
                                         const std::vector<std::string>& gold) {
  const std::set<std::string> labels(gold.begin(), gold.end());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    if (labels.count(predicted[i])) continue;
    if (bad++ == 0) first = i;
  }
  std::vector<std::string> out;
  warn_count(out, bad, predicted.size(), first, bad ? quote_for_message(predicted[first]) : "",
             "predicted labels are not labels of the answer key",
             "and can never be right (another spelling or case of the label names?)");
  return out;
}

std::vector<std::string> slot_warnings(const std::vector<SpanList>& predicted) {
  static const std::regex kSpan(R"([^:]+:[0-9]+-[0-9]+)");
  std::size_t bad = 0, total = 0, first = 0;
  std::string example;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    for (const std::string& span : predicted[i]) {
      ++total;
      if (std::regex_match(span, kSpan)) continue;
      if (bad++ == 0) first = i, example = quote_for_message(span);
    }
  }
  std::vector<std::string> out;
  warn_count(out, bad, total, first, example, "predicted spans are not of the form slot:start-end",
             "and can never be right");
  return out;
}

std::vector<std::string> top_warnings(const std::vector<TopParse>& predicted,
                                      const std::vector<TopParse>& gold) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < predicted.size() && i < gold.size(); ++i) {
    if (predicted[i].tags.size() == gold[i].tags.size()) continue;
    if (bad++ == 0) first = i;
  }
  std::vector<std::string> out;
  warn_count(out, bad, predicted.size(), first,
             bad ? std::to_string(predicted[first].tags.size()) + " tags against " +
                       std::to_string(gold[first].tags.size())
                 : "",
             "predicted tag lists differ in length from the answer key's",
             "and can never be right (another tokenization?)");
  return out;
}

}  // namespace

TaskScore score_task(Task task, const json& predictions, const json& gold,
                     const std::string& predictions_file, const std::string& gold_file) {
  TaskScore s;
  s.task = task_key(task);
  s.metric = metric_name(task);
  const json& p = task_list(predictions, task, predictions_file);
  const json& g = task_list(gold, task, gold_file);
  if (gold.is_array()) {
    s.warnings.push_back(gold_file +
                         " is a bare list, not DialoGLUE's answer key gt_test.json (an object "
                         "keyed by task): is it a prediction file?");
  }
  // Reads both lists with `read`, checks the counts, applies `metric`, adds `warn`'s findings.
  auto score_with = [&](TaskScore& out, const json& pj, const json& gj, auto read, auto metric,
                        auto warn) {
    const auto pl = read(pj, predictions_file);
    const auto gl = read(gj, gold_file);
    check_counts(pl.size(), gl.size(), task, predictions_file, gold_file);
    out.value = metric(pl, gl);
    out.count = gl.size();
    for (std::string& w : warn(pl, gl)) out.warnings.push_back(predictions_file + ": " + w);
  };
  switch (task_kind(task)) {
    case TaskKind::Intent:
      score_with(
          s, p, g, intent_labels_from_json,
          [](const auto& a, const auto& b) { return intent_accuracy(a, b); }, intent_warnings);
      break;
    case TaskKind::Slot:
      score_with(
          s, p, g, span_lists_from_json,
          [&s](const auto& a, const auto& b) {
            SlotF1 details = slot_f1_details(a, b);
            s.slot_types = std::move(details.types);
            return details.score;
          },
          [](const auto& a, const auto&) { return slot_warnings(a); });
      break;
    case TaskKind::Top:
      score_with(
          s, p, g, top_parses_from_json,
          [](const auto& a, const auto& b) { return top_exact_match(a, b); }, top_warnings);
      break;
    case TaskKind::Dst:
      no_multiwoz_gold();
  }
  return s;
}

std::vector<TaskScore> score_task_runs(Task task, const json& predictions, const json& gold,
                                       const std::string& predictions_file,
                                       const std::string& gold_file, bool* run_list) {
  if (task_kind(task) == TaskKind::Dst) no_multiwoz_gold();
  const json& p = task_list(predictions, task, predictions_file);
  const json& g = task_list(gold, task, gold_file);
  // A run's entries are predictions: strings for intent tasks, lists for the others.
  const bool intent = task_kind(task) == TaskKind::Intent;
  bool runs = !p.empty(), all_empty = true;
  for (const json& r : p) {
    runs = runs && r.is_array() && (r.empty() || (intent ? r[0].is_string() : r[0].is_array()));
    all_empty = all_empty && r.is_array() && r.empty();
  }
  if (runs && all_empty && p.size() == g.size()) runs = false;  // one run predicting no spans
  if (run_list) *run_list = runs;
  if (!runs) return {score_task(task, predictions, gold, predictions_file, gold_file)};
  std::vector<TaskScore> out;
  for (std::size_t k = 0; k < p.size(); ++k) {
    out.push_back(
        score_task(task, p[k], gold, predictions_file + " run " + std::to_string(k + 1), gold_file));
  }
  return out;
}

TaskScore score_task_files(Task task, const std::string& predictions_path,
                           const std::string& gold_path) {
  if (task_kind(task) == TaskKind::Dst) no_multiwoz_gold();
  const json gold = json_parse_file(gold_path);
  const json predictions = json_parse_file(predictions_path);
  return score_task(task, predictions, gold, predictions_path, gold_path);
}

TaskScore score_trippy_file(const std::string& predictions_path, const TripPyConfig& config) {
  const json root = json_parse_file(predictions_path);
  const json& list = task_list(root, Task::Multiwoz, predictions_path);
  const auto records = trippy_turns_from_json(list, config.slots, predictions_path);
  if (records.empty()) throw DataError(predictions_path, "", "", "holds no prediction records");
  TaskScore s;
  s.task = task_key(Task::Multiwoz);
  s.metric = metric_name(Task::Multiwoz);
  try {
    s.value = trippy_joint_goal_accuracy(records, config);
  } catch (const std::invalid_argument& e) {
    throw DataError(predictions_path, "", "", e.what());
  }
  s.count = records.size();
  return s;
}

}  // namespace dialtree::eval
