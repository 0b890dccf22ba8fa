#include "eval/results_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <system_error>

#include <fmt/core.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "eval/metrics.h"
#include "eval/submission.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::eval {

namespace fs = std::filesystem;

const std::vector<std::string>& run_identity_keys() {
  static const std::vector<std::string> keys = {"format", "model_weights", "setting",
                                                "gold_fingerprint", "pseudo_labels"};
  return keys;
}

std::string file_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path, "", "", "cannot open file for reading");
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, 64 bits
  std::uint64_t bytes = 0;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < n; ++i) {
      hash ^= static_cast<unsigned char>(buffer[i]);
      hash *= 1099511628211ULL;
    }
    bytes += n;
  }
  if (in.bad()) throw DataError(path, "", "", "read error");
  return fmt::format("{} bytes, fnv1a64 {:016x}", bytes, hash);
}

std::string fingerprint_or_none(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? file_fingerprint(path) : "none";
}

namespace {

/// The value of identity key `key` as compared.
json identity_value(const json& header, const std::string& key) {
  if (!header.contains(key)) return json();  // null: "absent"
  return header.at(key);
}

/// `header`'s `options`, `device` aside (where a run ran is no part of what it is).
json common_recipe(const json& header) {
  json v = header.contains("options") ? header.at("options") : json();
  if (v.is_object()) v.erase("device");
  return v;
}

/// The recipe `task` ran with by `header`: its `options` with the task's `task_options` (by
/// either spelling) on top, `device` aside.
json task_recipe(const json& header, const std::string& task) {
  json v = common_recipe(header);
  if (!v.is_object() || !header.contains("task_options") ||
      !header.at("task_options").is_object()) {
    return v;
  }
  for (const auto& [name, keys] : header.at("task_options").items()) {
    if (readers::dialoglue_task_folder(name) != readers::dialoglue_task_folder(task) || !keys.is_object()) continue;
    for (const auto& [key, value] : keys.items()) v[key] = value;
  }
  v.erase("device");
  return v;
}

/// The keys of `recipe` whose value differs from `common`'s (null for a key `recipe` lacks).
json recipe_difference(const json& recipe, const json& common) {
  json out = json::object();
  if (!recipe.is_object() || !common.is_object()) return out;
  for (const auto& [key, value] : recipe.items()) {
    if (!common.contains(key) || common.at(key) != value) out[key] = value;
  }
  for (const auto& [key, value] : common.items()) {
    if (!recipe.contains(key)) out[key] = nullptr;
  }
  return out;
}

/// Why `was` and `now` (the values of identity key `key`) differ, for a message: for objects
/// (the recipe) each key that differs with both values, else both values.
std::string difference(const std::string& key, const json& was, const json& now) {
  const auto shown = [](const json& v) { return v.is_null() ? std::string("absent") : v.dump(); };
  if (was.is_object() && now.is_object()) {
    std::string out;
    for (const auto& [k, v] : was.items()) {
      const json other = now.contains(k) ? now.at(k) : json();
      if (v != other) {
        out += fmt::format("{}{}.{} was {}, is {}", out.empty() ? "" : "; ", key, k, shown(v),
                           shown(other));
      }
    }
    for (const auto& [k, v] : now.items()) {
      if (!was.contains(k)) {
        out += fmt::format("{}{}.{} was absent, is {}", out.empty() ? "" : "; ", key, k,
                           shown(v));
      }
    }
    return out;
  }
  return fmt::format("{} was {}, is {}", key, shown(was), shown(now));
}

/// Checks one earlier task entry's shape: a "runs" array of objects with an integer "seed" and
/// a number "test". @throws SchemaError naming the file and the JSON path.
void check_task_entry(const json& entry, const JsonPlace& place, const std::string& path) {
  const json& runs = json_as_array(json_require(entry, "runs", place, path), place,
                                   json_child_path(path, "runs"));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string run_path = json_index_path(json_child_path(path, "runs"), i);
    json_as_int(json_require(runs[i], "seed", place, run_path), place,
                json_child_path(run_path, "seed"));
    const json& test = json_require(runs[i], "test", place, run_path);
    if (!test.is_number()) {
      throw SchemaError(place.file, place.where, json_child_path(run_path, "test"),
                        "must be a number, got " + json_type_name(test));
    }
  }
}

fs::path predictions_path(const std::string& out_dir, const std::string& task,
                          std::uint64_t seed) {
  return fs::path(out_dir) / task / ("seed-" + std::to_string(seed)) / "test_predictions.json";
}

}  // namespace

EarlierResults read_earlier_results(const std::string& out_dir, const json& header,
                                    const std::vector<std::string>& running) {
  std::set<std::string> runs_now;
  for (const std::string& t : running) runs_now.insert(readers::dialoglue_task_folder(t));
  EarlierResults out;
  const fs::path file = fs::path(out_dir) / "results.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return out;
  const json earlier = json_parse_file(file.string());
  const JsonPlace place{file.string(), ""};
  json_as_object(earlier, place, "");
  for (const std::string& key : run_identity_keys()) {
    const json was = identity_value(earlier, key), now = identity_value(header, key);
    if (was != now) {
      out.other_run = difference(key, was, now);
      return out;
    }
  }
  const json& tasks = json_as_object(json_require(earlier, "tasks", place, ""), place, "tasks");
  std::string first_difference;  // of the first task left out for its recipe
  for (const auto& [name, entry] : tasks.items()) {
    const std::string path = json_child_path("tasks", name);
    check_task_entry(entry, place, path);
    const json was = task_recipe(earlier, name);
    if (runs_now.count(readers::dialoglue_task_folder(name)) == 0) {
      // Not run now: kept with the recipe it ran with.
      if (json keys = recipe_difference(was, common_recipe(header)); !keys.empty()) {
        out.task_options[name] = std::move(keys);
      }
    } else if (const json now = task_recipe(header, name); was != now) {
      const std::string why = difference("options", was, now);
      if (first_difference.empty()) first_difference = why;
      out.other_recipe.push_back(name + " (" + why + ")");
      continue;
    }
    json kept = entry;
    kept["runs"] = json::array();
    for (const json& r : entry.at("runs")) {
      const auto seed = r.at("seed").get<std::uint64_t>();
      const fs::path predictions = predictions_path(out_dir, name, seed);
      if (!fs::is_regular_file(predictions, ec)) {
        out.dropped.push_back(
            fmt::format("{} seed {}: {} is missing", name, seed, predictions.string()));
        continue;
      }
      try {
        out.predictions[{name, seed}] = json_parse_file(predictions.string());
      } catch (const DataError& e) {
        out.dropped.push_back(fmt::format("{} seed {}: {}", name, seed, e.what()));
        continue;
      }
      kept["runs"].push_back(r);
    }
    if (kept["runs"].empty()) continue;
    merge_task_runs(kept, json());  // mean, std and val_mean over the runs kept
    out.tasks[name] = std::move(kept);
  }
  const json recorded = out.task_options;
  for (const auto& [name, keys] : recorded.items()) {
    if (!out.tasks.contains(name)) out.task_options.erase(name);  // every run of it was dropped
  }
  if (!out.other_recipe.empty() && out.other_recipe.size() == tasks.size()) {
    out.other_run = first_difference;  // no task of this recipe: another run, as a whole
    out.other_recipe.clear();
  }
  return out;
}

std::string set_aside_results(const std::string& out_dir) {
  const fs::path file = fs::path(out_dir) / "results.json";
  std::error_code ec;
  fs::path previous = fs::path(out_dir) / "results.previous.json";
  for (int n = 2; fs::exists(previous, ec); ++n) {
    previous = fs::path(out_dir) / ("results.previous-" + std::to_string(n) + ".json");
  }
  fs::rename(file, previous, ec);
  if (ec) {
    throw DataError(file.string(), "", "",
                    "could not be renamed to " + previous.string() + ": " + ec.message());
  }
  return previous.string();
}

void merge_task_runs(json& entry, const json& earlier) {
  json runs = entry.at("runs");
  std::set<std::uint64_t> seeds;
  for (const json& r : runs) seeds.insert(r.at("seed").get<std::uint64_t>());
  if (!earlier.is_null()) {
    for (const json& r : earlier.at("runs")) {
      if (seeds.count(r.at("seed").get<std::uint64_t>()) == 0) runs.push_back(r);
    }
  }
  std::stable_sort(runs.begin(), runs.end(), [](const json& a, const json& b) {
    return a.at("seed").get<std::uint64_t>() < b.at("seed").get<std::uint64_t>();
  });
  if (runs.empty()) throw std::invalid_argument("merge_task_runs: no runs");
  std::vector<double> test;
  double val_sum = 0;
  std::size_t val_count = 0;
  for (const json& r : runs) {
    test.push_back(r.at("test").get<double>());
    if (r.contains("val") && r.at("val").is_number()) {
      val_sum += r.at("val").get<double>();
      ++val_count;
    }
  }
  const MeanStd ms = mean_std(test);
  entry["runs"] = std::move(runs);
  entry["mean"] = ms.mean;
  entry["std"] = ms.std;
  // No run with a val score (a hand-made file): null, which results_table prints as "–".
  entry["val_mean"] = val_count > 0 ? json(val_sum / static_cast<double>(val_count)) : json();
}

std::vector<std::uint64_t> seeds_of(const json& tasks) {
  std::set<std::uint64_t> seeds;
  for (const auto& [name, entry] : tasks.items()) {
    for (const json& r : entry.at("runs")) seeds.insert(r.at("seed").get<std::uint64_t>());
  }
  return {seeds.begin(), seeds.end()};
}

json submission_of(const json& tasks, const RunPredictions& predictions, bool few) {
  json submission = json::object();
  for (const auto& [name, entry] : tasks.items()) {
    const std::string key = task_key(parse_task(name));
    for (const json& r : entry.at("runs")) {
      const auto seed = r.at("seed").get<std::uint64_t>();
      const auto it = predictions.find({name, seed});
      if (it == predictions.end()) {
        throw std::invalid_argument(
            fmt::format("submission_of: no predictions for {} seed {}", name, seed));
      }
      if (few) {
        submission[key].push_back(it->second);
      } else {
        submission[key] = it->second;  // runs are in seed order: the first seed's list
        break;
      }
    }
  }
  return submission;
}

std::string results_table(const json& results) {
  std::string out = fmt::format(
      "model `{}`, setting {}, seeds {}\n\n| task | metric | test mean ± std | seed: test | val "
      "mean |\n|---|---|---|---|---|\n",
      results.at("model").get<std::string>(), results.at("setting").get<std::string>(),
      results.at("seeds").dump());
  for (const auto& [name, t] : results.at("tasks").items()) {
    std::string per_seed;
    for (const auto& r : t.at("runs")) {
      per_seed += fmt::format("{}{}: {:.2f}", per_seed.empty() ? "" : ", ",
                              r.at("seed").get<std::uint64_t>(), r.at("test").get<double>());
    }
    // One seed has no sample std (n - 1 = 0): say so rather than print "± 0.00".
    const std::string spread = t.at("runs").size() > 1
                                   ? fmt::format("± {:.2f}", t.at("std").get<double>())
                                   : std::string("(one seed)");
    const json& val = t.contains("val_mean") ? t.at("val_mean") : json();
    out += fmt::format("| {} | {} | {:.2f} {} | {} | {} |\n", name,
                       t.at("metric").get<std::string>(), t.at("mean").get<double>(), spread,
                       per_seed,
                       val.is_number() ? fmt::format("{:.2f}", val.get<double>()) : "–");
  }
  return out;
}

ResultsFolder::ResultsFolder(std::string out_dir, json header, bool few,
                             const std::vector<std::string>& running,
                             std::function<void(const std::string&)> notice)
    : out_dir_(std::move(out_dir)), few_(few), notice_(std::move(notice)),
      results_(std::move(header)) {
  EarlierResults earlier = read_earlier_results(out_dir_, results_, running);
  // The header describes every task the file holds: this call's by its recipe, the kept ones
  // it does not run by theirs.
  for (const auto& [name, keys] : earlier.task_options.items()) {
    results_["task_options"][name] = keys;
  }
  other_run_ = std::move(earlier.other_run);
  other_recipe_ = std::move(earlier.other_recipe);
  earlier_tasks_ = std::move(earlier.tasks);
  predictions_ = std::move(earlier.predictions);
  if (notice_) {
    for (const std::string& d : earlier.dropped) {
      notice_(fmt::format("{}/results.json: left out {}", out_dir_, d));
    }
    if (!earlier_tasks_.empty()) {
      std::string kept;
      for (const auto& [name, entry] : earlier_tasks_.items()) {
        const std::size_t n = entry.at("runs").size();
        kept += fmt::format("{}{} ({} seed{})", kept.empty() ? "" : ", ", name, n,
                            n == 1 ? "" : "s");
      }
      notice_(fmt::format("{}/results.json: adding to the results there: {} (a seed run again "
                          "replaces its earlier run)",
                          out_dir_, kept));
    }
  }
  results_["tasks"] = earlier_tasks_;
  results_["seeds"] = seeds_of(results_["tasks"]);
}

void ResultsFolder::record(const std::string& task, json entry, std::uint64_t seed,
                           json predictions) {
  if (!other_run_.empty() || !other_recipe_.empty()) {  // set aside once, at the first record
    const std::string previous = set_aside_results(out_dir_);
    if (notice_ && !other_run_.empty()) {
      notice_(fmt::format("{}/results.json described another run ({}): renamed to {}; this "
                          "folder's results start anew (its seed folders are overwritten as "
                          "this run reaches them)",
                          out_dir_, other_run_, previous));
    } else if (notice_) {
      std::string tasks;
      for (const std::string& t : other_recipe_) tasks += (tasks.empty() ? "" : "; ") + t;
      notice_(fmt::format("{}/results.json held tasks run with another recipe: {}; renamed to {}, "
                          "and its tasks of this recipe carried over into the new results.json",
                          out_dir_, tasks, previous));
    }
    other_run_.clear();
    other_recipe_.clear();
  }
  predictions_[{task, seed}] = std::move(predictions);
  merge_task_runs(entry, earlier_tasks_.contains(task) ? earlier_tasks_.at(task) : json());
  results_["tasks"][task] = std::move(entry);
  results_["seeds"] = seeds_of(results_["tasks"]);
  const fs::path dir(out_dir_);
  write_file_atomic((dir / "results.json").string(), results_.dump(2) + "\n");
  write_file_atomic((dir / "results.md").string(), results_table(results_));
  write_submission((dir / "submission.json").string(),
                   submission_of(results_["tasks"], predictions_, few_));
}

}  // namespace dialtree::eval
