#include "eval/results_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include <fmt/core.h>

#include "common/error.h"
#include "eval/metrics.h"
#include "eval/submission.h"

namespace dialtree::eval {

namespace fs = std::filesystem;

const std::vector<std::string>& run_identity_keys() {
  // What makes two calls one run: the same weights fine-tuned the same way on the same setting,
  // scored against the same gold. `env` (the host) and `seeds` (each call's own) are not.
  static const std::vector<std::string> keys = {
      "format", "model", "model_weights", "setting", "options", "gold", "pseudo_label_dir"};
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

namespace {

/// `v` for a message: short values whole, long ones (an options object) cut.
std::string shown(const json* v) {
  if (v == nullptr) return "absent";
  std::string s = v->dump();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
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

EarlierResults read_earlier_results(const std::string& out_dir, const json& header) {
  EarlierResults out;
  const fs::path file = fs::path(out_dir) / "results.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return out;
  const json earlier = json_parse_file(file.string());
  const JsonPlace place{file.string(), ""};
  json_as_object(earlier, place, "");
  for (const std::string& key : run_identity_keys()) {
    const json* was = earlier.contains(key) ? &earlier.at(key) : nullptr;
    const json* now = header.contains(key) ? &header.at(key) : nullptr;
    if ((was == nullptr) != (now == nullptr) || (was != nullptr && *was != *now)) {
      out.replaced_because =
          fmt::format("its {} is {}, this run's is {}", key, shown(was), shown(now));
      const fs::path previous = fs::path(out_dir) / "results.previous.json";
      fs::rename(file, previous, ec);
      if (ec) {
        throw DataError(file.string(), "", "",
                        "describes another run (" + out.replaced_because +
                            ") and could not be renamed to " + previous.string() + ": " +
                            ec.message());
      }
      return out;
    }
  }
  const json& tasks = json_as_object(json_require(earlier, "tasks", place, ""), place, "tasks");
  for (const auto& [name, entry] : tasks.items()) {
    const std::string path = json_child_path("tasks", name);
    check_task_entry(entry, place, path);
    json kept = entry;
    kept["runs"] = json::array();
    for (const json& r : entry.at("runs")) {
      const auto seed = r.at("seed").get<std::uint64_t>();
      if (!fs::is_regular_file(predictions_path(out_dir, name, seed), ec)) {
        out.dropped.push_back(fmt::format("{} seed {}: {} is missing", name, seed,
                                          predictions_path(out_dir, name, seed).string()));
        continue;
      }
      kept["runs"].push_back(r);
    }
    if (!kept["runs"].empty()) out.tasks[name] = std::move(kept);
  }
  return out;
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
  if (val_count > 0) entry["val_mean"] = val_sum / static_cast<double>(val_count);
}

std::vector<std::uint64_t> seeds_of(const json& tasks) {
  std::set<std::uint64_t> seeds;
  for (const auto& [name, entry] : tasks.items()) {
    for (const json& r : entry.at("runs")) seeds.insert(r.at("seed").get<std::uint64_t>());
  }
  return {seeds.begin(), seeds.end()};
}

json submission_from_runs(const json& tasks, const std::string& out_dir, bool few) {
  json submission = json::object();
  for (const auto& [name, entry] : tasks.items()) {
    const std::string key = task_key(parse_task(name));
    for (const json& r : entry.at("runs")) {
      const json list = json_parse_file(
          predictions_path(out_dir, name, r.at("seed").get<std::uint64_t>()).string());
      if (few) {
        submission[key].push_back(list);
      } else {
        submission[key] = list;  // runs are in seed order: the first seed's list
        break;
      }
    }
  }
  return submission;
}

}  // namespace dialtree::eval
