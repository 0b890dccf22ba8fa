// eval/results_file: adding an `eval dialoglue` call's results to an output folder (docs/
// evaluation.md "Adding to an output folder"): which earlier results are kept, how runs merge,
// and the submission file read back from the runs. Torch-free: runs in the guard build too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "eval/results_file.h"
#include "expect_error.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

/// Every task, as the tasks a call runs (each earlier task's recipe is compared).
const std::vector<std::string> kEvery = {"banking", "clinc", "hwu", "restaurant8k", "dstc8_sgd",
                                         "top"};

json run(int seed, double test, double val) {
  return {{"seed", seed}, {"test", test}, {"val", val}, {"best_epoch", 3}};
}

/// A results.json header as run_dialoglue writes it, for model `model`.
json header(const std::string& model = "runs/m/final") {
  return {{"format", "dialtree-dialoglue-results/1"},
          {"model", model},
          {"model_weights", "10 bytes, fnv1a64 0000000000000001"},
          {"setting", "few"},
          {"seeds", {1, 2}},
          {"options", {{"learning_rate", 3e-4}, {"device", "auto"}}},
          {"gold", "gt_test.json"},
          {"gold_fingerprint", "20 bytes, fnv1a64 0000000000000003"},
          {"env", {{"cpu_model", "A"}}},
          {"tasks", json::object()}};
}

TEST(ResultsFile, FingerprintIsSizeAndFnv1a64) {
  testing::TempDir tmp;
  write(tmp.path() / "empty", "");
  write(tmp.path() / "a", "a");
  write(tmp.path() / "foobar", "foobar");
  // FNV-1a 64's published test vectors: "" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c,
  // "foobar" -> 85944171f73967e8.
  EXPECT_EQ(file_fingerprint(tmp.file("empty")), "0 bytes, fnv1a64 cbf29ce484222325");
  EXPECT_EQ(file_fingerprint(tmp.file("a")), "1 bytes, fnv1a64 af63dc4c8601ec8c");
  EXPECT_EQ(file_fingerprint(tmp.file("foobar")), "6 bytes, fnv1a64 85944171f73967e8");
  // A file over the 1 MiB read buffer hashes as one stream.
  const std::string big(3u << 20 | 5, 'x');
  write(tmp.path() / "big", big);
  std::uint64_t h = 14695981039346656037ULL;
  for (char c : big) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(file_fingerprint(tmp.file("big")),
            std::to_string(big.size()) + " bytes, fnv1a64 " + hex);
  EXPECT_THAT(testing::error_of<DataError>([&] { file_fingerprint(tmp.file("none")); }),
              HasSubstr("none"));
}

TEST(ResultsFile, MergeKeepsEarlierSeedsAndRecomputesMeanStd) {
  json entry = {{"metric", "accuracy"}, {"runs", {run(2, 50, 60)}}};
  const json earlier = {{"runs", {run(3, 70, 65), run(1, 40, 55), run(2, 99, 99)}}};
  merge_task_runs(entry, earlier);
  ASSERT_EQ(entry.at("runs").size(), 3u);
  // Seed order; seed 2 is this call's run, not the earlier one.
  EXPECT_EQ(entry.at("runs")[0].at("seed"), 1);
  EXPECT_EQ(entry.at("runs")[1], run(2, 50, 60));
  EXPECT_EQ(entry.at("runs")[2].at("seed"), 3);
  EXPECT_DOUBLE_EQ(entry.at("mean").get<double>(), 160.0 / 3);
  // Sample std of 40, 50, 70: deviations -13.33, -3.33, 16.67; sum of squares 466.67 / 2.
  EXPECT_NEAR(entry.at("std").get<double>(), std::sqrt(700.0 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(entry.at("val_mean").get<double>(), 60.0);
  EXPECT_EQ(entry.at("metric"), "accuracy");

  json alone = {{"runs", {run(5, 42, 41)}}};
  merge_task_runs(alone, json());
  EXPECT_DOUBLE_EQ(alone.at("mean").get<double>(), 42);
  EXPECT_DOUBLE_EQ(alone.at("std").get<double>(), 0);
  json no_val = {{"runs", {{{"seed", 1}, {"test", 10.0}}}}};
  merge_task_runs(no_val, json());
  EXPECT_TRUE(no_val.at("val_mean").is_null());
  EXPECT_EQ(seeds_of(json{{"hwu", entry}, {"banking", alone}}),
            (std::vector<std::uint64_t>{1, 2, 3, 5}));
}

TEST(ResultsFile, EarlierResultsOfTheSameRunAreKeptAndOfAnotherRunSetAside) {
  testing::TempDir tmp;
  const fs::path out = tmp.path();
  EXPECT_TRUE(read_earlier_results(out.string(), header(), kEvery).tasks.empty());  // no file yet

  json earlier = header();
  earlier["tasks"]["hwu"] = {{"mean", 45}, {"std", 7.07}, {"val_mean", 57.5},
                             {"runs", {run(1, 40, 55), run(2, 50, 60)}}};
  earlier["tasks"]["dstc8_sgd"] = {{"mean", 30}, {"runs", {run(1, 30, 45)}}};
  earlier["tasks"]["top"] = {{"mean", 60}, {"runs", {run(1, 60, 61)}}};
  write(out / "results.json", earlier.dump());
  write(out / "hwu" / "seed-1" / "test_predictions.json", R"(["a", "b"])");
  write(out / "dstc8_sgd" / "seed-1" / "test_predictions.json", R"([["time:1-2"], []])");
  write(out / "top" / "seed-1" / "test_predictions.json", R"([["IN_GET", )");  // cut short
  // hwu seed 2's predictions are gone: that run is left out and said.

  // The same run from another host, another spelling of the model's path, another device.
  json now = header("./runs/m/final/");
  now["env"] = {{"cpu_model", "B"}};
  now["seeds"] = {7};
  now["options"]["device"] = "cuda";
  const EarlierResults kept = read_earlier_results(out.string(), now, kEvery);
  EXPECT_TRUE(kept.other_run.empty()) << kept.other_run;
  ASSERT_EQ(kept.dropped.size(), 2u);
  EXPECT_THAT(kept.dropped[0], HasSubstr("hwu seed 2: "));
  EXPECT_THAT(kept.dropped[0], HasSubstr("seed-2/test_predictions.json is missing"));
  EXPECT_THAT(kept.dropped[1], HasSubstr("top seed 1: "));
  EXPECT_FALSE(kept.tasks.contains("top"));  // its one run is gone: no entry
  // What is kept says what it holds: hwu's figures are seed 1's alone now.
  const json& hwu = kept.tasks.at("hwu");
  ASSERT_EQ(hwu.at("runs").size(), 1u);
  EXPECT_DOUBLE_EQ(hwu.at("mean").get<double>(), 40);
  EXPECT_DOUBLE_EQ(hwu.at("std").get<double>(), 0);
  EXPECT_DOUBLE_EQ(hwu.at("val_mean").get<double>(), 55);
  EXPECT_EQ(kept.tasks.at("dstc8_sgd").at("runs")[0], run(1, 30, 45));

  // The submission file from the runs: dstc8_sgd's key is gt_test.json's "dstc8".
  const json few = submission_of(kept.tasks, kept.predictions, true);
  EXPECT_EQ(few, json::parse(R"({"hwu": [["a", "b"]], "dstc8": [[["time:1-2"], []]]})"));
  const json full = submission_of(kept.tasks, kept.predictions, false);
  EXPECT_EQ(full, json::parse(R"({"hwu": ["a", "b"], "dstc8": [["time:1-2"], []]})"));

  // Another model's weights at the same path: another run. Reading moves nothing.
  json retrained = header();
  retrained["model_weights"] = "10 bytes, fnv1a64 0000000000000002";
  const EarlierResults other = read_earlier_results(out.string(), retrained, kEvery);
  EXPECT_TRUE(other.tasks.empty());
  EXPECT_EQ(other.other_run,
            "model_weights was \"10 bytes, fnv1a64 0000000000000001\", is \"10 bytes, fnv1a64 "
            "0000000000000002\"");
  EXPECT_TRUE(fs::exists(out / "results.json"));
  // Another recipe: the keys that differ, with both values.
  json recipe = header();
  recipe["options"]["learning_rate"] = 1e-4;
  recipe["options"]["rdrop_weight"] = 5.0;
  EXPECT_EQ(read_earlier_results(out.string(), recipe, kEvery).other_run,
            "options.learning_rate was 0.0003, is 0.0001; options.rdrop_weight was absent, is "
            "5.0");
  // Other pseudo-label files (self-training with new teachers' labels): another run.
  json relabelled = header();
  relabelled["pseudo_labels"] = {{"hwu", "5 bytes, fnv1a64 0000000000000009"}};
  EXPECT_THAT(read_earlier_results(out.string(), relabelled, kEvery).other_run,
              HasSubstr("pseudo_labels was absent"));

  // Setting aside never overwrites an earlier set-aside file.
  EXPECT_EQ(set_aside_results(out.string()), (out / "results.previous.json").string());
  EXPECT_FALSE(fs::exists(out / "results.json"));
  EXPECT_EQ(json::parse(std::ifstream(out / "results.previous.json")), earlier);
  write(out / "results.json", "{}");
  EXPECT_EQ(set_aside_results(out.string()), (out / "results.previous-2.json").string());
  EXPECT_EQ(json::parse(std::ifstream(out / "results.previous.json")), earlier);
  EXPECT_THAT(testing::error_of<DataError>([&] { set_aside_results(out.string()); }),
              HasSubstr("could not be renamed"));

  // A results.json written before model_weights existed describes an unknown run.
  json old = header();
  old.erase("model_weights");
  write(out / "results.json", old.dump());
  EXPECT_THAT(read_earlier_results(out.string(), header(), kEvery).other_run,
              HasSubstr("model_weights was absent"));
}

TEST(ResultsFile, AFolderAddsTheCallsRunsToTheEarlierOnesAndRewritesItsFiles) {
  testing::TempDir tmp;
  const fs::path out = tmp.path();
  json earlier = header();
  earlier["tasks"]["hwu"] = {{"metric", "accuracy"},
                             {"runs", {run(1, 40, 55), run(2, 50, 60)}}};
  write(out / "results.json", earlier.dump());
  write(out / "hwu" / "seed-1" / "test_predictions.json", R"(["a", "b"])");
  write(out / "hwu" / "seed-2" / "test_predictions.json", R"(["c", "d"])");
  std::vector<std::string> said;
  ResultsFolder folder(out.string(), header(), /*few=*/true, kEvery,
                       [&](const std::string& s) { said.push_back(s); });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("adding to the results there: hwu (2 seeds)"));
  EXPECT_EQ(folder.results().at("seeds"), json({1, 2}));

  // This call runs seed 2 again (it replaces the earlier run) and seed 3.
  json entry = {{"metric", "accuracy"}, {"runs", {run(2, 60, 62)}}};
  folder.record("hwu", entry, 2, json{"e", "f"});
  entry["runs"].push_back(run(3, 70, 64));
  folder.record("hwu", entry, 3, json{"g", "h"});
  const json written = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(written, folder.results());
  const json& hwu = written.at("tasks").at("hwu");
  ASSERT_EQ(hwu.at("runs").size(), 3u);
  EXPECT_DOUBLE_EQ(hwu.at("mean").get<double>(), 56.666666666666664);  // 40, 60, 70
  EXPECT_DOUBLE_EQ(hwu.at("std").get<double>(), std::sqrt(233.33333333333334));
  EXPECT_DOUBLE_EQ(hwu.at("val_mean").get<double>(), 60.333333333333336);  // 55, 62, 64
  EXPECT_EQ(written.at("seeds"), json({1, 2, 3}));
  // The submission: seed 1's predictions read back from its file, seeds 2-3 from this call.
  EXPECT_EQ(json::parse(std::ifstream(out / "submission.json")),
            json::parse(R"({"hwu": [["a", "b"], ["e", "f"], ["g", "h"]]})"));
  std::ifstream md(out / "results.md");
  const std::string table((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_THAT(table, HasSubstr("| hwu | accuracy | 56.67 ± 15.28 | 1: 40.00, 2: 60.00, 3: 70.00 | "
                               "60.33 |"));

  // Another run in the same folder: the file is set aside at its first record, and said.
  json other = header();
  other["model_weights"] = "10 bytes, fnv1a64 0000000000000003";
  said.clear();
  ResultsFolder another(out.string(), other, /*few=*/false, kEvery,
                        [&](const std::string& s) { said.push_back(s); });
  EXPECT_TRUE(said.empty());
  EXPECT_TRUE(fs::exists(out / "results.json"));  // nothing moves before the first record
  another.record("hwu", {{"metric", "accuracy"}, {"runs", {run(5, 80, 81)}}}, 5, json{"x", "y"});
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("renamed to " + (out / "results.previous.json").string()));
  EXPECT_EQ(json::parse(std::ifstream(out / "results.previous.json")), written);
  EXPECT_EQ(json::parse(std::ifstream(out / "results.json")).at("seeds"), json({5}));
  EXPECT_EQ(json::parse(std::ifstream(out / "submission.json")),
            json::parse(R"({"hwu": ["x", "y"]})"));  // full data: one run's list
}

TEST(ResultsFile, TheRecipeIsComparedPerTask) {
  // docs/evaluation.md "Per-task options": a task's recipe is `options` with its `task_options`.
  testing::TempDir tmp;
  const fs::path out = tmp.path();
  json earlier = header();
  earlier["options"]["num_train_epochs"] = 60;
  earlier["tasks"]["hwu"] = {{"metric", "accuracy"}, {"runs", {run(1, 40, 55)}}};
  earlier["tasks"]["dstc8_sgd"] = {{"metric", "slot F1"}, {"runs", {run(1, 30, 45)}}};
  write(out / "results.json", earlier.dump());
  write(out / "hwu" / "seed-1" / "test_predictions.json", R"(["a", "b"])");
  write(out / "dstc8_sgd" / "seed-1" / "test_predictions.json", R"([["time:1-2"], []])");

  // dstc8 now runs 120 epochs: hwu is kept, dstc8_sgd's runs are of another recipe.
  json now = header();
  now["options"]["num_train_epochs"] = 60;
  now["task_options"] = {{"dstc8_sgd", {{"num_train_epochs", 120}}}};
  const EarlierResults kept = read_earlier_results(out.string(), now, kEvery);
  EXPECT_TRUE(kept.other_run.empty()) << kept.other_run;
  EXPECT_EQ(kept.other_recipe, std::vector<std::string>{
                                   "dstc8_sgd (options.num_train_epochs was 60, is 120)"});
  EXPECT_TRUE(kept.tasks.contains("hwu"));
  EXPECT_FALSE(kept.tasks.contains("dstc8_sgd"));
  EXPECT_EQ(kept.predictions.count({"dstc8_sgd", 1}), 0u);
  // A section that only names another task, or repeats the common value, changes nothing.
  json same = now;
  same["task_options"] = {{"top", {{"num_train_epochs", 30}}}};
  EXPECT_EQ(read_earlier_results(out.string(), same, kEvery).other_recipe.size(), 0u);
  // Every task of another recipe: another run, as a whole, with the first difference.
  json all_other = now;
  all_other["options"]["num_train_epochs"] = 90;
  const EarlierResults other = read_earlier_results(out.string(), all_other, kEvery);
  EXPECT_TRUE(other.tasks.empty());
  EXPECT_TRUE(other.other_recipe.empty());
  EXPECT_EQ(other.other_run, "options.num_train_epochs was 60, is 120");  // dstc8_sgd comes first

  // The folder sets the earlier file aside at its first record and carries hwu over.
  std::vector<std::string> said;
  ResultsFolder folder(out.string(), now, /*few=*/true, kEvery,
                       [&](const std::string& s) { said.push_back(s); });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("adding to the results there: hwu (1 seed)"));
  EXPECT_TRUE(fs::exists(out / "results.json"));  // nothing moves before the first record
  folder.record("dstc8_sgd", {{"metric", "slot F1"}, {"runs", {run(2, 35, 50)}}}, 2,
                json{json::array(), json::array()});
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[1], HasSubstr("held tasks run with another recipe: dstc8_sgd "
                                 "(options.num_train_epochs was 60, is 120); renamed to " +
                                 (out / "results.previous.json").string()));
  EXPECT_EQ(json::parse(std::ifstream(out / "results.previous.json")), earlier);
  const json written = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(written.at("task_options"), now.at("task_options"));
  EXPECT_EQ(written.at("tasks").at("hwu").at("runs"), json::array({run(1, 40, 55)}));
  EXPECT_EQ(written.at("tasks").at("dstc8_sgd").at("runs"), json::array({run(2, 35, 50)}));
  EXPECT_EQ(json::parse(std::ifstream(out / "submission.json")),
            json::parse(R"({"hwu": [["a", "b"]], "dstc8": [[[], []]]})"));

  // A folder made with 120 epochs for every task keeps its dstc8 runs under the per-task recipe
  // that gives dstc8 120 epochs (the recipe each task ran with is the same).
  json e120 = header();
  e120["options"]["num_train_epochs"] = 120;
  e120["tasks"]["dstc8_sgd"] = {{"metric", "slot F1"}, {"runs", {run(2, 35, 50)}}};
  write(out / "results.json", e120.dump());
  write(out / "dstc8_sgd" / "seed-2" / "test_predictions.json", R"([[], []])");
  const EarlierResults carried = read_earlier_results(out.string(), now, kEvery);
  EXPECT_TRUE(carried.other_run.empty()) << carried.other_run;
  EXPECT_TRUE(carried.other_recipe.empty());
  EXPECT_TRUE(carried.tasks.contains("dstc8_sgd"));
  // A section spelt "dstc8" describes the task results.json keys as "dstc8_sgd".
  json spelt = now;
  spelt["task_options"] = {{"dstc8", {{"num_train_epochs", 120}}}};
  EXPECT_TRUE(read_earlier_results(out.string(), spelt, kEvery).tasks.contains("dstc8_sgd"));

  // A call judges only the tasks it runs: hwu alone keeps the 120-epoch dstc8 runs, whatever
  // its recipe would give dstc8, and the new header says how they ran.
  json hwu_only = header();
  hwu_only["options"]["num_train_epochs"] = 60;
  const EarlierResults other_tasks = read_earlier_results(out.string(), hwu_only, {"hwu"});
  EXPECT_TRUE(other_tasks.other_run.empty()) << other_tasks.other_run;
  EXPECT_TRUE(other_tasks.other_recipe.empty());
  EXPECT_TRUE(other_tasks.tasks.contains("dstc8_sgd"));
  EXPECT_EQ(other_tasks.task_options, json::parse(R"({"dstc8_sgd": {"num_train_epochs": 120}})"));
  said.clear();
  ResultsFolder hwu_folder(out.string(), hwu_only, /*few=*/true, {"hwu"},
                           [&](const std::string& s) { said.push_back(s); });
  hwu_folder.record("hwu", {{"metric", "accuracy"}, {"runs", {run(1, 41, 56)}}}, 1,
                    json{"a", "b"});
  ASSERT_EQ(said.size(), 1u);  // only "adding to the results there"
  const json mixed = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(mixed.at("options").at("num_train_epochs"), 60);
  EXPECT_EQ(mixed.at("task_options"), json::parse(R"({"dstc8_sgd": {"num_train_epochs": 120}})"));
  EXPECT_EQ(mixed.at("tasks").at("dstc8_sgd").at("runs"), json::array({run(2, 35, 50)}));
  // Read back, each task's recipe is the one it ran with: a 120-epoch dstc8 call keeps both.
  EXPECT_TRUE(read_earlier_results(out.string(), now, kEvery).other_recipe.empty());
}

TEST(ResultsFile, MalformedEarlierResultsNameTheFileAndField) {
  testing::TempDir tmp;
  json bad = header();
  bad["tasks"]["hwu"] = {{"runs", {{{"seed", 1}, {"test", "high"}}}}};
  write(tmp.path() / "results.json", bad.dump());
  const std::string e = testing::error_of<SchemaError>(
      [&] { read_earlier_results(tmp.path().string(), header(), kEvery); });
  EXPECT_THAT(e, HasSubstr("results.json"));
  EXPECT_THAT(e, HasSubstr("tasks.hwu.runs[0].test"));
  EXPECT_THAT(e, HasSubstr("must be a number, got string"));

  write(tmp.path() / "results.json", "{\"tasks\": ");
  EXPECT_THAT(testing::error_of<DataError>(
                  [&] { read_earlier_results(tmp.path().string(), header(), kEvery); }),
              HasSubstr("results.json"));
}

}  // namespace
}  // namespace dialtree::eval
