// eval/eval_config: the strict fine-tuning recipe reader (keys, YAML 1.2 core scalars, ranges
// at the key's line, overrides, one document) and the shipped recipe file. Torch-free: runs in
// the guard build too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "eval/eval_config.h"
#include "expect_error.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string error_of(const std::string& yaml, const std::vector<std::string>& ov = {}) {
  try {
    parse_finetune_options(yaml, "eval.yaml", ov);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FinetuneConfig, KeysTypesAndOverrides) {
  const FinetuneOptions o =
      parse_finetune_options("num_train_epochs: 7\nlearning_rate: 2.0e-4\nbf16: false\n",
                             "eval.yaml", {"dropout=0.3", "from_scratch=true"});
  EXPECT_EQ(o.num_train_epochs, 7);
  EXPECT_DOUBLE_EQ(o.learning_rate, 2e-4);
  EXPECT_FALSE(o.bf16);
  EXPECT_DOUBLE_EQ(o.dropout, 0.3);
  EXPECT_TRUE(o.from_scratch);
  EXPECT_EQ(o.per_device_train_batch_size, FinetuneOptions{}.per_device_train_batch_size);
  const FinetuneOptions recipe = parse_finetune_options(
      "rdrop_weight: 5.0\nmlm_weight: 0.1\nmlm_probability: 0.2\nearly_stopping_patience: 8\n",
      "eval.yaml");
  EXPECT_DOUBLE_EQ(recipe.rdrop_weight, 5.0);
  EXPECT_DOUBLE_EQ(recipe.mlm_weight, 0.1);
  EXPECT_DOUBLE_EQ(recipe.mlm_probability, 0.2);
  EXPECT_EQ(recipe.early_stopping_patience, 8);
  const nlohmann::json dumped = finetune_options_json(recipe);
  EXPECT_EQ(dumped.size(), finetune_option_keys().size());
  EXPECT_EQ(dumped.at("rdrop_weight"), 5.0);
  EXPECT_EQ(dumped.at("early_stopping_patience"), 8);
  // An override wins over the file; an empty text or a comment-only file keeps the defaults.
  EXPECT_EQ(parse_finetune_options("num_train_epochs: 7\n", "eval.yaml", {"num_train_epochs=9"})
                .num_train_epochs,
            9);
  EXPECT_EQ(parse_finetune_options("# nothing\n", "eval.yaml").num_train_epochs,
            FinetuneOptions{}.num_train_epochs);
}

TEST(FinetuneConfig, UnknownKeysAndWrongTypesNameTheLine) {
  EXPECT_THAT(error_of("learning_rte: 1e-4\n"),
              AllOf(HasSubstr("eval.yaml"), HasSubstr("line 1"), HasSubstr("learning_rte"),
                    HasSubstr("did you mean 'learning_rate'")));
  EXPECT_THAT(error_of("bf16: true\nnum_train_epochs: ten\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("num_train_epochs"), HasSubstr("an integer"),
                    HasSubstr("'ten'")));
  EXPECT_THAT(error_of("bf16: maybe\n"), HasSubstr("true or false"));
  EXPECT_THAT(error_of("- a\n- b\n"), HasSubstr("mapping"));
  EXPECT_THAT(error_of("num_train_epochs: [1, 2]\n"), HasSubstr("found a list"));
  EXPECT_THAT(error_of("seed: 1\n"), HasSubstr("unknown key 'seed'"));
  // Names from other tools find ours; a key close to nothing gets the list, not a random key.
  EXPECT_THAT(error_of("epochs: 3\n"), HasSubstr("did you mean 'num_train_epochs'"));
  EXPECT_THAT(error_of("lr: 1e-4\n"), HasSubstr("did you mean 'learning_rate'"));
  EXPECT_THAT(error_of("output_dir: x\n"),
              AllOf(Not(HasSubstr("did you mean")), HasSubstr("a fine-tuning recipe's keys: "
                                                              "num_train_epochs,")));
  EXPECT_THAT(error_of("dropout: 0.1\ndropout: 0.2\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("duplicate key 'dropout'")));
}

// yaml-cpp's as<T>() accepted these (issue 16): they are the classic silent misreadings.
TEST(FinetuneConfig, StrictScalarsAsTheTrainerConfig) {
  EXPECT_THAT(error_of("num_train_epochs: \"3\"\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("an integer"), HasSubstr("the string \"3\"")));
  EXPECT_THAT(error_of("bf16: yes\n"), HasSubstr("expected a boolean"));
  EXPECT_THAT(error_of("num_train_epochs: 010\n"), HasSubstr("octal"));
  EXPECT_THAT(error_of("learning_rate: .nan\n"), HasSubstr("finite"));
  EXPECT_THAT(error_of("max_utt_len: 99999999999\n"), HasSubstr("32-bit"));
  EXPECT_THAT(error_of("", {"bf16=on"}),
              AllOf(HasSubstr("<command line>"), HasSubstr("override 'bf16=on'")));
  EXPECT_THAT(error_of("", {"dropout"}), HasSubstr("key=value"));
  EXPECT_THAT(error_of("", {"num_train_epoch=3"}), HasSubstr("did you mean 'num_train_epochs'"));
  // An override is named escaped and cut, as a task override is: never echoed whole or raw.
  const std::string long_override = error_of("", {"dropout=" + std::string(100000, 'x')});
  EXPECT_THAT(long_override, AllOf(HasSubstr("override 'dropout=xxx"), HasSubstr("...'")));
  EXPECT_LT(long_override.size(), 2000u);
  // So is a long key: refused by its length before any message could echo it.
  const std::string long_key = error_of("", {std::string(100000, 'k') + "=1"});
  EXPECT_THAT(long_key, AllOf(HasSubstr("the key is 100000 bytes long"),
                              HasSubstr("no key is longer than 200")));
  EXPECT_LT(long_key.size(), 2000u);
  // At the limit: 200 bytes are a key (an unknown one), 201 are refused by their length.
  EXPECT_THAT(error_of("", {std::string(200, 'k') + "=1"}), HasSubstr("unknown key"));
  EXPECT_THAT(error_of("", {std::string(201, 'k') + "=1"}),
              HasSubstr("the key is 201 bytes long"));
  EXPECT_THAT(error_of("", {"bf16=o\xffn"}),
              AllOf(HasSubstr("override 'bf16=o\\xFFn'"), Not(HasSubstr("\xff"))));
}

TEST(FinetuneConfig, RangesAreCheckedAtLoadTimeWithTheLine) {
  EXPECT_THAT(error_of("bf16: true\nnum_train_epochs: 0\n"),
              AllOf(HasSubstr("eval.yaml"), HasSubstr("line 2"), HasSubstr("num_train_epochs"),
                    HasSubstr("must be >= 1, got 0")));
  EXPECT_THAT(error_of("warmup_ratio: 1.5\n"), HasSubstr("must be in [0.0, 1.0], got 1.5"));
  EXPECT_THAT(error_of("learning_rate: 0\n"), HasSubstr("must be > 0.0, got 0.0"));
  EXPECT_THAT(error_of("mlm_probability: 1\n"), HasSubstr("must be in (0.0, 1.0), got 1.0"));
  EXPECT_THAT(error_of("dropout: 1\n"), HasSubstr("must be < 1.0, got 1.0"));
  EXPECT_THAT(error_of("early_stopping_patience: -1\n"),
              HasSubstr("must be >= 0 (0 = off), got -1"));
  EXPECT_THAT(error_of("", {"weight_decay=-0.1"}),
              AllOf(HasSubstr("override 'weight_decay=-0.1'"), HasSubstr("must be >= 0.0")));
  // The device is checked at load time, with its line; every device spelling is accepted.
  EXPECT_THAT(error_of("bf16: true\ndevice: gpu\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("device"),
                    HasSubstr("\"gpu\" is not a device: use auto, cpu, cuda or cuda:N")));
  EXPECT_THAT(error_of("", {"device=cuda:x"}), HasSubstr("override 'device=cuda:x'"));
  EXPECT_EQ(parse_finetune_options("device: cuda:1\n", "eval.yaml").device, "cuda:1");
  EXPECT_EQ(parse_finetune_options("", "eval.yaml", {"device=cpu"}).device, "cpu");
  EXPECT_EQ(FinetuneOptions{}.device, "auto");
  // The classifier's start: two names, and a positive C for the linear probe.
  EXPECT_THAT(error_of("classifier_init: probe\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("classifier_init"),
                    HasSubstr("must be random or linear_probe, got \"probe\"")));
  EXPECT_THAT(error_of("linear_probe_c: 0\n"), HasSubstr("must be > 0.0, got 0.0"));
  EXPECT_EQ(FinetuneOptions{}.classifier_init, "random");
  EXPECT_EQ(parse_finetune_options("", "eval.yaml", {"classifier_init=linear_probe"})
                .classifier_init,
            "linear_probe");
  // dropout < 0 keeps the bundle's values: allowed.
  EXPECT_DOUBLE_EQ(parse_finetune_options("dropout: -1\n", "eval.yaml").dropout, -1.0);
  // Options built in code are checked by the same table.
  FinetuneOptions o;
  EXPECT_FALSE(finetune_options_problem(o).has_value());
  o.per_device_eval_batch_size = 0;
  const auto problem = finetune_options_problem(o);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->first, "per_device_eval_batch_size");
  EXPECT_EQ(problem->second, "must be >= 1, got 0");
}

TEST(FinetuneConfig, TheFileMustBeSmallUtf8Text) {
  // Invalid UTF-8 anywhere (a Latin-1 comment, a UTF-16 file) is named by line and byte.
  EXPECT_THAT(error_of("bf16: true\nnum_train_epochs: 1 # caf\xe9\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("invalid UTF-8 at byte 26 of the line")));
  EXPECT_THAT(error_of(std::string("\xff\xfen\0u\0m\0", 8)), HasSubstr("is UTF-16 text"));
  // A value's invalid bytes are named with its key, and escaped, not echoed raw.
  EXPECT_THAT(error_of("learning_rate: \xff\xfe\n"),
              AllOf(HasSubstr("learning_rate"), HasSubstr("\\xFF\\xFE")));
  testing::TempDir tmp;
  {
    std::ofstream big(tmp.file("big.yaml"), std::ios::binary);
    big << std::string(5 << 20, '#');
  }
  try {
    load_finetune_options(tmp.file("big.yaml"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("larger than 4 MiB"));
  }
  // A device that never ends is refused after 4 MiB, not read until the memory is full.
  EXPECT_THROW(load_finetune_options("/dev/zero"), DataError);
}

TEST(FinetuneConfig, OneDocumentAndSyntaxErrorsWithTheirPlace) {
  EXPECT_THAT(error_of("num_train_epochs: 3\n---\nnum_train_epochs: 4\n"),
              HasSubstr("expected one YAML document"));
  // The input that made yaml-cpp's LoadAll spin forever (docs/failure-cases.md F1).
  EXPECT_THAT(error_of(",\n"), HasSubstr("',' cannot begin a YAML node"));
  EXPECT_THAT(error_of("num_train_epochs: [1\n"),
              AllOf(HasSubstr("YAML syntax error"), HasSubstr("line")));
}

std::string recipe_error_of(const std::string& yaml, const std::vector<std::string>& ov = {}) {
  return testing::error_of<DataError>([&] { parse_finetune_recipe(yaml, "eval.yaml", ov); });
}

TEST(FinetuneConfig, PerTaskSectionsOnTopOfTheCommonKeys) {
  // docs/evaluation.md "Per-task options". The section is read on top of every common key, the
  // ones after it in the file and the command line's included.
  const FinetuneRecipe r = parse_finetune_recipe(
      "tasks:\n  dstc8:\n    num_train_epochs: 120\n  top:\n    learning_rate: 1.0e-4\n"
      "num_train_epochs: 60\nlearning_rate: 3.0e-4\n",
      "eval.yaml", {"dropout=0.3", "tasks.top.num_train_epochs=30"});
  EXPECT_EQ(r.options.num_train_epochs, 60);
  EXPECT_DOUBLE_EQ(r.options.dropout, 0.3);
  ASSERT_EQ(r.task_options.size(), 2u);
  const FinetuneOptions& dstc8 = r.for_task("dstc8");  // either spelling
  EXPECT_EQ(&dstc8, &r.for_task("dstc8_sgd"));
  EXPECT_EQ(dstc8.num_train_epochs, 120);
  EXPECT_DOUBLE_EQ(dstc8.learning_rate, 3e-4);
  EXPECT_DOUBLE_EQ(dstc8.dropout, 0.3);
  EXPECT_EQ(r.for_task("top").num_train_epochs, 30);
  EXPECT_DOUBLE_EQ(r.for_task("top").learning_rate, 1e-4);
  EXPECT_EQ(&r.for_task("hwu"), &r.options);
  EXPECT_EQ(task_options_json(r), nlohmann::json::parse(R"({"dstc8_sgd": {"num_train_epochs": 120},
      "top": {"num_train_epochs": 30, "learning_rate": 0.0001}})"));
  // A section that repeats the common values differs in nothing: no task_options entry.
  EXPECT_TRUE(task_options_json(parse_finetune_recipe(
                  "tasks:\n  hwu:\n    num_train_epochs: 60\nnum_train_epochs: 60\n", "eval.yaml"))
                  .empty());
  // A whole section on the command line; a later override of the same key wins.
  const FinetuneRecipe o = parse_finetune_recipe(
      "tasks:\n  hwu:\n    num_train_epochs: 5\n", "eval.yaml",
      {"tasks.hwu={num_train_epochs: 7, dropout: 0.1}", "tasks.dstc8_sgd.bf16=false"});
  EXPECT_EQ(o.for_task("hwu").num_train_epochs, 7);
  EXPECT_DOUBLE_EQ(o.for_task("hwu").dropout, 0.1);
  EXPECT_FALSE(o.for_task("dstc8").bf16);
  EXPECT_TRUE(o.options.bf16);
  // An empty `tasks:` is no section.
  EXPECT_TRUE(parse_finetune_recipe("tasks:\n", "eval.yaml").task_options.empty());
  // The command line beats the file, sections included: a common key=value reaches a task whose
  // file section sets the key (a quick 3-epoch check runs 3 epochs everywhere), a task override
  // beats both.
  const FinetuneRecipe line = parse_finetune_recipe(
      "tasks:\n  dstc8:\n    num_train_epochs: 120\n    device: cuda\n", "eval.yaml",
      {"num_train_epochs=3", "device=cpu", "tasks={top: {dropout: 0.2}}", "tasks.hwu="});
  EXPECT_EQ(line.for_task("dstc8").num_train_epochs, 3);
  EXPECT_EQ(line.for_task("dstc8").device, "cpu");
  EXPECT_DOUBLE_EQ(line.for_task("top").dropout, 0.2);
  EXPECT_EQ(line.for_task("top").num_train_epochs, 3);
  EXPECT_EQ(line.for_task("hwu").num_train_epochs, 3);  // an empty section on the line
  EXPECT_EQ(parse_finetune_recipe("tasks:\n  dstc8:\n    num_train_epochs: 120\n", "eval.yaml",
                                  {"num_train_epochs=3", "tasks.dstc8.num_train_epochs=7"})
                .for_task("dstc8_sgd")
                .num_train_epochs,
            7);
}

TEST(FinetuneConfig, PerTaskSectionErrorsNameTheLineAndTask) {
  EXPECT_THAT(recipe_error_of("tasks:\n  dstc9:\n    num_train_epochs: 1\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("unknown task 'dstc9'"),
                    HasSubstr("banking, clinc, hwu, restaurant8k, dstc8, dstc8_sgd, top")));
  EXPECT_THAT(recipe_error_of("tasks:\n  dstc8:\n    num_train_epochs: 0\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("tasks.dstc8_sgd.num_train_epochs"),
                    HasSubstr("must be >= 1, got 0")));
  EXPECT_THAT(recipe_error_of("tasks:\n  top:\n    epoch: 3\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("tasks.top.epoch"),
                    HasSubstr("did you mean 'num_train_epochs'")));
  EXPECT_THAT(recipe_error_of("tasks:\n  top:\n    num_train_epochs: ten\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("tasks.top.num_train_epochs"),
                    HasSubstr("an integer")));
  EXPECT_THAT(recipe_error_of("tasks:\n  dstc8:\n    bf16: true\n  dstc8_sgd:\n    bf16: false\n"),
              AllOf(HasSubstr("line 4"), HasSubstr("has two sections ('dstc8' and 'dstc8_sgd')")));
  EXPECT_THAT(recipe_error_of("tasks:\n  top: {}\n  top: {}\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("duplicate key 'top'")));
  // A task name's bad bytes are escaped and a long one cut, never echoed raw.
  EXPECT_THAT(recipe_error_of("", {"tasks.dst\xff.num_train_epochs=3"}),
              AllOf(HasSubstr("unknown task 'dst\\xFF'"), Not(HasSubstr("\xff"))));
  EXPECT_LT(recipe_error_of("", {"tasks." + std::string(100000, 'x') + ".num_train_epochs=3"})
                .size(),
            2000u);
  EXPECT_THAT(recipe_error_of("tasks: [dstc8]\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("mapping of task names"),
                    HasSubstr("found a list")));
  EXPECT_THAT(recipe_error_of("tasks:\n  top: 3\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("mapping of option keys")));
  EXPECT_THAT(recipe_error_of("tasks:\n  top: {}\ntasks:\n  hwu: {}\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("duplicate key 'tasks'")));
  EXPECT_THAT(recipe_error_of("", {"tasks.nope.num_train_epochs=3"}),
              AllOf(HasSubstr("override 'tasks.nope.num_train_epochs=3'"),
                    HasSubstr("unknown task 'nope'")));
  EXPECT_THAT(recipe_error_of("", {"tasks.top.num_train_epochs=ten"}),
              AllOf(HasSubstr("override 'tasks.top.num_train_epochs=ten'"),
                    HasSubstr("an integer")));
  EXPECT_THAT(recipe_error_of("", {"tasks.top=3"}), HasSubstr("mapping of option keys"));
  // A command with one set of options refuses the sections instead of ignoring them.
  EXPECT_THAT(error_of("tasks:\n  top:\n    num_train_epochs: 3\n"),
              HasSubstr("per-task sections are read by `eval dialoglue` only"));
}

TEST(FinetuneConfig, TheShippedRecipeLoads) {
  const FinetuneRecipe r = load_finetune_recipe(testing::fixture("../../configs/eval-few.yaml"));
  const FinetuneOptions& o = r.options;
  EXPECT_DOUBLE_EQ(o.rdrop_weight, 5.0);
  EXPECT_DOUBLE_EQ(o.mlm_weight, 0.1);
  EXPECT_DOUBLE_EQ(o.dropout, 0.25);
  EXPECT_EQ(o.num_train_epochs, 60);
  // dstc8 runs 120 epochs, as val chose (docs/results.md "Where fine-tuning erases the token
  // stage's lead"); nothing else differs, and no other task has a section.
  EXPECT_EQ(task_options_json(r), nlohmann::json::parse(R"({"dstc8_sgd": {"num_train_epochs": 120}})"));
  EXPECT_EQ(r.for_task("restaurant8k").num_train_epochs, 60);
  EXPECT_EQ(load_finetune_recipe(testing::fixture("../../configs/eval-full.yaml")).task_options.size(),
            0u);
  EXPECT_THROW(load_finetune_options("/nonexistent/eval.yaml"), DataError);
}

}  // namespace
}  // namespace dialtree::eval
