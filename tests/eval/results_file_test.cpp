// eval/results_file: adding an `eval dialoglue` call's results to an output folder (docs/
// evaluation.md "Adding to an output folder"): which earlier results are kept, how runs merge,
// and the submission file read back from the runs. Torch-free: runs in the guard build too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

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
          {"options", {{"learning_rate", 3e-4}}},
          {"gold", "gt_test.json"},
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
  EXPECT_EQ(seeds_of(json{{"hwu", entry}, {"banking", alone}}),
            (std::vector<std::uint64_t>{1, 2, 3, 5}));
}

TEST(ResultsFile, EarlierResultsOfTheSameRunAreKeptAndOfAnotherRunSetAside) {
  testing::TempDir tmp;
  const fs::path out = tmp.path();
  EXPECT_TRUE(read_earlier_results(out.string(), header()).tasks.empty());  // no file yet

  json earlier = header();
  earlier["tasks"]["hwu"] = {{"mean", 45}, {"runs", {run(1, 40, 55), run(2, 50, 60)}}};
  earlier["tasks"]["dstc8_sgd"] = {{"mean", 30}, {"runs", {run(1, 30, 45)}}};
  write(out / "results.json", earlier.dump());
  write(out / "hwu" / "seed-1" / "test_predictions.json", R"(["a", "b"])");
  write(out / "dstc8_sgd" / "seed-1" / "test_predictions.json", R"([["time:1-2"], []])");
  // seed 2's predictions are gone: that run is left out and said.

  json now = header();
  now["env"] = {{"cpu_model", "B"}};  // another host, the same run
  now["seeds"] = {7};
  const EarlierResults kept = read_earlier_results(out.string(), now);
  EXPECT_TRUE(kept.replaced_because.empty());
  ASSERT_EQ(kept.dropped.size(), 1u);
  EXPECT_THAT(kept.dropped[0], HasSubstr("hwu seed 2: "));
  EXPECT_THAT(kept.dropped[0], HasSubstr("seed-2/test_predictions.json is missing"));
  ASSERT_EQ(kept.tasks.at("hwu").at("runs").size(), 1u);
  EXPECT_EQ(kept.tasks.at("dstc8_sgd").at("runs")[0], run(1, 30, 45));

  // The submission file from the runs: dstc8_sgd's key is gt_test.json's "dstc8".
  const json few = submission_from_runs(kept.tasks, out.string(), true);
  EXPECT_EQ(few, json::parse(R"({"hwu": [["a", "b"]], "dstc8": [[["time:1-2"], []]]})"));
  const json full = submission_from_runs(kept.tasks, out.string(), false);
  EXPECT_EQ(full, json::parse(R"({"hwu": ["a", "b"], "dstc8": [["time:1-2"], []]})"));

  // Another model's weights at the same path: set aside under results.previous.json.
  json retrained = header();
  retrained["model_weights"] = "10 bytes, fnv1a64 0000000000000002";
  const EarlierResults other = read_earlier_results(out.string(), retrained);
  EXPECT_TRUE(other.tasks.empty());
  EXPECT_THAT(other.replaced_because,
              HasSubstr("its model_weights is \"10 bytes, fnv1a64 0000000000000001\", this "
                        "run's is \"10 bytes, fnv1a64 0000000000000002\""));
  EXPECT_FALSE(fs::exists(out / "results.json"));
  EXPECT_EQ(json::parse(std::ifstream(out / "results.previous.json")), earlier);

  // A results.json written before model_weights existed describes an unknown run: set aside.
  json old = header();
  old.erase("model_weights");
  write(out / "results.json", old.dump());
  EXPECT_THAT(read_earlier_results(out.string(), header()).replaced_because,
              HasSubstr("its model_weights is absent"));
}

TEST(ResultsFile, MalformedEarlierResultsNameTheFileAndField) {
  testing::TempDir tmp;
  json bad = header();
  bad["tasks"]["hwu"] = {{"runs", {{{"seed", 1}, {"test", "high"}}}}};
  write(tmp.path() / "results.json", bad.dump());
  const std::string e = testing::error_of<SchemaError>(
      [&] { read_earlier_results(tmp.path().string(), header()); });
  EXPECT_THAT(e, HasSubstr("results.json"));
  EXPECT_THAT(e, HasSubstr("tasks.hwu.runs[0].test"));
  EXPECT_THAT(e, HasSubstr("must be a number, got string"));

  write(tmp.path() / "results.json", "{\"tasks\": ");
  EXPECT_THAT(testing::error_of<DataError>(
                  [&] { read_earlier_results(tmp.path().string(), header()); }),
              HasSubstr("results.json"));
}

}  // namespace
}  // namespace dialtree::eval
