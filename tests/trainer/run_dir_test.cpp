// trainer/run_dir.h: the one parser of checkpoint folder names and its edge cases, listing, the
// newest complete checkpoint (what restarts take), stale temporaries, and the save protocol
// with trainer_state.json (docs/training.md "Run directory").
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "test_paths.h"
#include "trainer/run_dir.h"

namespace dialtree::trainer {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::vector<std::int64_t> listed_steps(const fs::path& dir) {
  std::vector<std::int64_t> out;
  for (const CheckpointDir& c : list_checkpoints(dir)) {
    EXPECT_EQ(c.path, dir / checkpoint_name(c.step));
    out.push_back(c.step);
  }
  return out;
}

TEST(RunDir, CheckpointNamesAndTheirParserAreInverses) {
  EXPECT_EQ(checkpoint_name(0), "checkpoint-0");
  EXPECT_EQ(checkpoint_name(1200), "checkpoint-1200");
  for (const std::int64_t step : {std::int64_t{0}, std::int64_t{7}, std::int64_t{1200},
                                  std::int64_t{1000000000000000000}, kInt64Max}) {
    EXPECT_EQ(parse_checkpoint_name(checkpoint_name(step)), step);
  }
  EXPECT_EQ(parse_checkpoint_name("checkpoint-9223372036854775807"), kInt64Max);  // 19 digits
}

TEST(RunDir, NamesThatDoNotFitInt64AreNotCheckpointsAndNothingThrows) {
  // 2^63 and beyond: one past int64, 20 digits, and far more digits than any integer type holds.
  for (const char* name :
       {"checkpoint-9223372036854775808", "checkpoint-18446744073709551616",
        "checkpoint-99999999999999999999", "checkpoint-123456789012345678901234567890"}) {
    EXPECT_FALSE(parse_checkpoint_name(name).has_value()) << name;
  }
}

TEST(RunDir, LeadingZerosEmptyStepsAndNonDigitsAreNotCheckpointNames) {
  // Leading zeros: not as checkpoint_name() writes them, and "checkpoint-007" would stand for
  // the same step as "checkpoint-7".
  for (const char* name : {"checkpoint-007", "checkpoint-00", "checkpoint-0123"}) {
    EXPECT_FALSE(parse_checkpoint_name(name).has_value()) << name;
  }
  EXPECT_EQ(parse_checkpoint_name("checkpoint-0"), 0);
  EXPECT_FALSE(parse_checkpoint_name("checkpoint-").has_value());  // the prefix alone
  EXPECT_FALSE(parse_checkpoint_name("").has_value());
  for (const char* name :
       {"checkpoint-x", "checkpoint-12a", "checkpoint-a12", "checkpoint--1", "checkpoint-+1",
        "checkpoint- 1", "checkpoint-1 ", "checkpoint-1.5", "checkpoint-1e3", "checkpoint-0x1f",
        "Checkpoint-1", "checkpoint_1", "checkpoint1", ".checkpoint-1.tmp", "xcheckpoint-1"}) {
    EXPECT_FALSE(parse_checkpoint_name(name).has_value()) << name;
  }
}

TEST(RunDir, ListingTakesCheckpointFoldersOnlyByAscendingStep) {
  dialtree::testing::TempDir tmp;
  const fs::path out = tmp.path() / "run";
  EXPECT_TRUE(list_checkpoints(out).empty());  // no folder yet
  for (const char* name : {"checkpoint-10", "checkpoint-2", "checkpoint-9223372036854775807",
                           "checkpoint-99999999999999999999", "checkpoint-007", "checkpoint-",
                           "checkpoint-3x", ".checkpoint-14.tmp", "best", "final"}) {
    fs::create_directories(out / name);
  }
  std::ofstream(out / "checkpoint-5") << "a file, not a folder";
  EXPECT_THAT(listed_steps(out), ElementsAre(2, 10, kInt64Max));
}

TEST(RunDir, NewestCompleteCheckpoint) {
  dialtree::testing::TempDir tmp;
  const fs::path out = tmp.path() / "run";
  EXPECT_EQ(newest_checkpoint(out.string()), "");  // no folder yet
  EXPECT_EQ(newest_checkpoint(""), "");
  for (const char* name :
       {"checkpoint-2", "checkpoint-10", "checkpoint-12", "checkpoint-x", ".checkpoint-14.tmp",
        "best", "checkpoint-99999999999999999999", "checkpoint-0100"}) {
    fs::create_directories(out / name);
  }
  for (const char* name : {"checkpoint-2", "checkpoint-10", ".checkpoint-14.tmp", "best",
                           "checkpoint-99999999999999999999", "checkpoint-0100"}) {
    std::ofstream(out / name / kTrainerStateFile) << "{}";
  }
  // checkpoint-12 has no trainer_state.json (incomplete); 10 > 2 numerically; the 20-digit and
  // the zero-padded names are not checkpoints.
  EXPECT_EQ(newest_checkpoint(out.string()), (out / "checkpoint-10").string());
  // A restart takes only what the job wrote: checkpoint-10 dates from before the job started.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(out / "checkpoint-10" / kTrainerStateFile, now - std::chrono::hours(1));
  fs::last_write_time(out / "checkpoint-2" / kTrainerStateFile, now + std::chrono::seconds(1));
  EXPECT_EQ(newest_checkpoint(out.string(), now), (out / "checkpoint-2").string());
  EXPECT_EQ(newest_checkpoint(out.string(), now + std::chrono::hours(1)), "");
}

TEST(RunDir, StaleTemporariesAreWhatAKilledSaveLeavesAndNothingElse) {
  EXPECT_TRUE(is_stale_temporary(".checkpoint-3.tmp"));
  EXPECT_TRUE(is_stale_temporary("metrics.jsonl.tmp.1234.0"));
  EXPECT_FALSE(is_stale_temporary("checkpoint-3"));
  EXPECT_FALSE(is_stale_temporary("notes.tmp"));
  EXPECT_FALSE(is_stale_temporary("x.tmp.12"));
  EXPECT_FALSE(is_stale_temporary("x.tmp.12.a"));
  dialtree::testing::TempDir tmp;
  for (const char* name : {".checkpoint-3.tmp", "checkpoint-3", "notes.tmp"}) {
    fs::create_directories(tmp.path() / name);
  }
  std::ofstream(tmp.path() / "config.yaml.tmp.77.1") << "x";
  EXPECT_THAT(remove_stale_temporaries(tmp.path()),
              ElementsAre(".checkpoint-3.tmp", "config.yaml.tmp.77.1"));
  EXPECT_TRUE(fs::exists(tmp.path() / "checkpoint-3"));
  EXPECT_TRUE(fs::exists(tmp.path() / "notes.tmp"));
  EXPECT_TRUE(remove_stale_temporaries(tmp.path() / "missing").empty());
}

TrainerState sample_state(std::int64_t step) {
  TrainerState s;
  s.global_step = step;
  s.total_steps = 20;
  s.labelled_position = StreamPosition{1, 4};
  s.micro_batches_done = 2 * step;
  s.world_size = 2;
  s.gradient_accumulation_steps = 1;
  s.log_window = {{"loss", 1.5}, {"steps", 1}};
  s.train_seconds = 3.25;
  s.seed = 11;
  s.data_seed = 12;
  return s;
}

TEST(RunDir, WriteCheckpointPublishesTheFolderWithItsStateAndPrunesOnlyUpToItsStep) {
  dialtree::testing::TempDir tmp;
  const fs::path out = tmp.path();
  // An earlier run's checkpoint-50: beyond this run's steps, neither counted nor pruned.
  fs::create_directories(out / "checkpoint-50");
  auto weights = [](const fs::path& folder) {
    fs::create_directories(folder);
    std::ofstream(folder / "weights.bin") << "w";
  };
  for (const std::int64_t step : {2, 4, 6}) {
    const fs::path dir = write_checkpoint(out, sample_state(step), weights, 2);
    EXPECT_EQ(dir, out / checkpoint_name(step));
    EXPECT_TRUE(fs::exists(dir / "weights.bin"));
    EXPECT_FALSE(fs::exists(out / ("." + checkpoint_name(step) + ".tmp")));
  }
  EXPECT_THAT(listed_steps(out), ElementsAre(4, 6, 50));

  std::ifstream in(out / "checkpoint-6" / kTrainerStateFile);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("format"), kTrainerStateFormat);
  for (const char* key : {"global_step", "total_steps", "labelled_position", "unlabelled_position",
                          "micro_batches_done", "world_size", "gradient_accumulation_steps",
                          "log_window", "train_seconds", "seed", "data_seed", "batch_grouping"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j.at("unlabelled_position").is_null());

  const TrainerState back = read_trainer_state(out / "checkpoint-6", 12, 1);
  EXPECT_EQ(back.global_step, 6);
  EXPECT_TRUE(back.labelled_position == (StreamPosition{1, 4}));
  EXPECT_FALSE(back.unlabelled_position.has_value());
  EXPECT_EQ(back.micro_batches_done, 12);
  EXPECT_EQ(back.log_window, sample_state(6).log_window);
  EXPECT_DOUBLE_EQ(back.train_seconds, 3.25);
}

TEST(RunDir, ReadingAStateChecksFormatAndDataSeedAndReadsVersionOne) {
  dialtree::testing::TempDir tmp;
  const fs::path dir = tmp.path() / "checkpoint-3";
  fs::create_directories(dir);
  auto write = [&](nlohmann::json j) { std::ofstream(dir / kTrainerStateFile) << j.dump(); };
  nlohmann::json v1 = {{"format", kTrainerStateFormatV1},
                       {"global_step", 3},
                       {"data_seed", 5},
                       {"labelled_position", {{"epoch", 0}, {"next_batch", 3}}},
                       {"unlabelled_position", nullptr},
                       {"log_window", nlohmann::json::object()}};
  write(v1);
  const TrainerState s = read_trainer_state(dir, 5, 4);
  EXPECT_EQ(s.micro_batches_done, 12);     // one process, 3 steps x 4 micro-batches
  EXPECT_DOUBLE_EQ(s.train_seconds, 0.0);  // absent in older checkpoints
  // The message of read_trainer_state's DataError for a resuming run with `data_seed`.
  auto message = [&](std::int64_t data_seed) {
    try {
      read_trainer_state(dir, data_seed, 1);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message(6), HasSubstr("another data_seed"));
  // The batch grouping (docs/training.md "Batches that share values") is checked like the seed;
  // a state without it was made with random batches.
  const auto grouping_message = [&](const std::string& grouping) {
    try {
      return read_trainer_state(dir, 5, 1, grouping).batch_grouping;
    } catch (const DataError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(grouping_message(""), "");
  EXPECT_THAT(grouping_message("SV/4"),
              HasSubstr("made with random batches (data.group_by_view/data.group_size), this run "
                        "asks for groups SV/4; resuming would change the batch order"));
  v1["batch_grouping"] = "SV/4";
  write(v1);
  EXPECT_EQ(grouping_message("SV/4"), "SV/4");
  EXPECT_THAT(grouping_message("V/4"), HasSubstr("made with groups SV/4"));
  v1.erase("batch_grouping");
  v1["format"] = "dialtree-trainer-state/9";
  write(v1);
  EXPECT_THAT(message(5), HasSubstr("unsupported trainer state 'dialtree-trainer-state/9'"));
  v1["format"] = kTrainerStateFormat;  // version 2 needs micro_batches_done
  write(v1);
  EXPECT_THAT(message(5), HasSubstr("micro_batches_done"));
}

}  // namespace
}  // namespace dialtree::trainer
