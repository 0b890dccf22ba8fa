#include "plot/inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::plot {

namespace fs = std::filesystem;

namespace {

// `v` as a number; a SchemaError naming the path otherwise.
double number(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_number()) {
    throw SchemaError(place.file, place.where, path,
                      "expected a number, found " + json_type_name(v));
  }
  return v.get<double>();
}

// The legend name of a folder or file: its last component ("runs/a/" -> "a").
std::string base_name(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // a trailing slash
  std::string name = p.filename().string();
  return name.empty() || name == "." ? fs::absolute(p).lexically_normal().filename().string()
                                     : name;
}

}  // namespace

bool is_eval_key(const std::string& key) {
  return key.rfind("eval_", 0) == 0;
}

const Series* RunMetrics::find(const std::string& key) const {
  for (const auto& s : series) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

std::string x_axis_label(XAxis x) {
  return x == XAxis::minutes ? "minutes of training (evaluation excluded)" : "step";
}

RunMetrics read_metrics(const std::string& path, const std::string& name, XAxis x) {
  const bool minutes = x == XAxis::minutes;
  // One record's step, line, own train_seconds (read in minutes only; NaN: none) and whether it
  // is an evaluation record (one with an `eval_*` key).
  struct Record {
    std::int64_t step;
    std::size_t line;
    double seconds;
    bool eval;
  };
  std::vector<Record> records;
  // key -> step -> (value, the record it came from)
  std::map<std::string, std::map<std::int64_t, std::pair<double, std::size_t>>> values;
  std::map<std::int64_t, double> training_seconds;  // step -> its training record's seconds
  std::size_t unfinished = 0;
  std::int64_t max_step = -1;
  std::size_t restarts = 0;
  std::int64_t first_restart = -1, first_restart_after = -1;
  json_for_each_line(
      path,
      [&](std::size_t line, const json& rec) {
        const JsonPlace place{path, at_line(line)};
        json_as_object(rec, place, "");
        const std::int64_t step = json_as_int(json_require(rec, "step", place, ""), place, "step");
        if (step < 0) throw DataError(path, at_line(line), "step", "must be >= 0");
        if (step < max_step) {
          if (restarts++ == 0) first_restart = step, first_restart_after = max_step;
        }
        max_step = std::max(max_step, step);
        Record r{step, line, std::nan(""), false};
        for (const auto& [key, v] : rec.items()) {
          r.eval = r.eval || is_eval_key(key);
          if (key == "step" || !v.is_number()) continue;
          if (minutes && key == "train_seconds") {
            r.seconds = v.get<double>();
            continue;
          }
          values[key][step] = {v.get<double>(), records.size()};
        }
        if (!r.eval && !std::isnan(r.seconds)) training_seconds[step] = r.seconds;
        records.push_back(r);
      },
      &unfinished);
  if (records.empty()) {
    throw DataError(path, "", "",
                    unfinished != 0 ? "no complete logged step (its only line is unfinished)"
                                    : "no logged step (the file is empty)");
  }
  if (minutes && std::all_of(records.begin(), records.end(),
                             [](const Record& r) { return std::isnan(r.seconds); })) {
    throw DataError(path, "", "",
                    "no record has train_seconds: the run was logged before train_seconds "
                    "existed, so --x minutes cannot draw it; scripts/add-train-seconds.py RUN_DIR "
                    "writes RUN_DIR/metrics-with-train-seconds.jsonl with it (plot that file)");
  }
  // The x of record i (the one place that decides it).
  auto x_of = [&](std::size_t i) {
    const Record& r = records[i];
    if (!minutes) return static_cast<double>(r.step);
    if (!std::isnan(r.seconds)) return r.seconds / 60.0;
    const auto training = training_seconds.find(r.step);
    if (!r.eval || training == training_seconds.end()) {
      throw DataError(path, at_line(r.line), "train_seconds",
                      r.eval ? "is missing, and no training record of step " +
                                   std::to_string(r.step) + " has it"
                             : "is missing (other records have it)");
    }
    return training->second / 60.0;
  };
  RunMetrics run{name, path, {}, unfinished};
  run.x = x;
  run.step_restarts = restarts;
  run.first_restart_step = first_restart;
  run.first_restart_after = first_restart_after;
  for (const auto& [key, by_step] : values) {
    Series s{key, {}};
    for (const auto& [step, v] : by_step) s.points.push_back({x_of(v.second), v.first});
    run.series.push_back(std::move(s));
  }
  return run;
}

std::vector<Point> read_val_curve(const std::string& file, const std::string& where,
                                  const std::string& path, const json& value) {
  const JsonPlace place{file, where};
  std::vector<Point> curve;
  const json& arr = json_as_array(value, place, path);
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string p = json_index_path(path, i);
    json_as_object(arr[i], place, p);
    curve.push_back(
        {number(json_require(arr[i], "epoch", place, p), place, json_child_path(p, "epoch")),
         number(json_require(arr[i], "val", place, p), place, json_child_path(p, "val"))});
  }
  std::stable_sort(curve.begin(), curve.end(),
                   [](const Point& a, const Point& b) { return a.x < b.x; });
  return curve;
}

ModelScores parse_results(const std::string& file, const std::string& where,
                          const std::string& name, const json& results) {
  const JsonPlace place{file, where};
  json_as_object(results, place, "");
  ModelScores model{name, file, {}};
  const json& tasks = json_as_object(json_require(results, "tasks", place, ""), place, "tasks");
  for (const auto& [task, t] : tasks.items()) {
    const std::string tp = json_child_path("tasks", task);
    json_as_object(t, place, tp);
    TaskScores scores;
    scores.task = task;
    const json* metric = json_find(t, "metric", place, tp);
    scores.metric = metric ? json_as_string(*metric, place, json_child_path(tp, "metric"))
                           : std::string("score");
    scores.mean = number(json_require(t, "mean", place, tp), place, json_child_path(tp, "mean"));
    const json* sd = json_find(t, "std", place, tp);
    scores.std = sd ? number(*sd, place, json_child_path(tp, "std")) : 0.0;
    if (const json* runs = json_find(t, "runs", place, tp)) {
      const std::string rp = json_child_path(tp, "runs");
      json_as_array(*runs, place, rp);
      for (std::size_t i = 0; i < runs->size(); ++i) {
        const json& r = (*runs)[i];
        const std::string p = json_index_path(rp, i);
        json_as_object(r, place, p);
        SeedRun run;
        run.seed =
            json_as_int(json_require(r, "seed", place, p), place, json_child_path(p, "seed"));
        run.test = number(json_require(r, "test", place, p), place, json_child_path(p, "test"));
        if (const json* c = json_find(r, "curve", place, p)) {
          run.val_curve = read_val_curve(file, where, json_child_path(p, "curve"), *c);
        }
        scores.runs.push_back(std::move(run));
      }
    }
    model.tasks.push_back(std::move(scores));
  }
  return model;
}

std::vector<ModelScores> read_results_file(const std::string& path, const std::string& name) {
  const json doc = json_parse_file(path);
  std::vector<ModelScores> models;
  if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      const JsonPlace place{path, at_record(i)};
      json_as_object(doc[i], place, "");
      const std::string model =
          json_as_string(json_require(doc[i], "model", place, ""), place, "model");
      models.push_back(parse_results(path, at_record(i), model, doc[i]));
    }
    if (models.empty()) throw DataError(path, "", "", "the array holds no results object");
  } else {
    models.push_back(parse_results(path, "", name, doc));
  }
  return models;
}

ModelScores read_eval_dir(const std::string& dir, const std::string& name) {
  const std::string results = (fs::path(dir) / "results.json").string();
  ModelScores model = read_results_file(results, name).front();
  for (auto& task : model.tasks) {
    for (auto& run : task.runs) {
      if (!run.val_curve.empty()) continue;
      const fs::path rj =
          fs::path(dir) / task.task / ("seed-" + std::to_string(run.seed)) / "run.json";
      std::error_code ec;
      if (!fs::is_regular_file(rj, ec)) continue;
      const json rec = json_parse_file(rj.string());
      const JsonPlace place{rj.string(), ""};
      json_as_object(rec, place, "");
      if (const json* c = json_find(rec, "curve", place, "")) {
        run.val_curve = read_val_curve(rj.string(), "", "curve", *c);
      }
    }
  }
  return model;
}

Inputs load_inputs(const std::vector<std::string>& paths, XAxis x) {
  Inputs in;
  std::vector<std::string> run_paths, model_paths;  // as given, parallel to in.runs / models
  for (const auto& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) throw DataError(path, "", "", "no such file or folder");
    if (fs::is_directory(st)) {
      const fs::path metrics = fs::path(path) / "metrics.jsonl";
      const fs::path results = fs::path(path) / "results.json";
      const bool is_run = fs::exists(metrics, ec), is_eval = fs::exists(results, ec);
      if (!is_run && !is_eval) {
        throw DataError(path, "", "",
                        "neither metrics.jsonl (a pretraining run, `dialtree train`) nor "
                        "results.json (an eval folder, `dialtree eval dialoglue --out`) is in "
                        "this folder");
      }
      if (is_run) {
        in.runs.push_back(read_metrics(metrics.string(), base_name(path), x));
        run_paths.push_back(path);
      }
      if (is_eval) {
        in.models.push_back(read_eval_dir(path, base_name(path)));
        model_paths.push_back(path);
      }
      continue;
    }
    const fs::path p(path);
    const bool known_name = p.filename() == "metrics.jsonl" || p.filename() == "results.json" ||
                            p.filename() == "metrics-with-train-seconds.jsonl";
    const std::string name =
        known_name ? base_name(fs::absolute(p).parent_path().string()) : p.stem().string();
    if (p.extension() == ".jsonl") {
      in.runs.push_back(read_metrics(path, name, x));
      run_paths.push_back(path);
    } else {
      for (auto& m : read_results_file(path, name)) {
        in.models.push_back(std::move(m));
        model_paths.push_back(path);
      }
    }
  }
  // Two runs (or two models) with one name: name both by the path as given.
  auto disambiguate = [](auto& items, const std::vector<std::string>& given) {
    std::map<std::string, int> count;
    for (const auto& it : items) ++count[it.name];
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (count[items[i].name] > 1 && items[i].name != given[i]) {
        items[i].name =
            given[i] + (items[i].name == base_name(given[i]) ? "" : ":" + items[i].name);
      }
    }
  };
  disambiguate(in.runs, run_paths);
  disambiguate(in.models, model_paths);
  return in;
}

}  // namespace dialtree::plot
