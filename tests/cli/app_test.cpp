// cli/app: run_cli's exit statuses, in process: 0, 2 for bad usage or input, 70 for a broken
// internal check (a bug), 1 for anything else; one "error: ..." line on stderr.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/common_options.h"
#include "common/check.h"
#include "common/device_spec.h"
#include "common/error.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::cli {
namespace {

// Runs `action` as the callback of subcommand "go"; returns run_cli's status and stderr.
std::pair<int, std::string> run(const std::function<void()>& action) {
  CLI::App app("test");
  app.add_subcommand("go")->callback(action);
  std::vector<std::string> args = {"prog", "go"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  const int status = run_cli(app, static_cast<int>(argv.size()), argv.data(), {});
  return {status, ::testing::internal::GetCapturedStderr()};
}

// run_cli() on `app` with the command line `args` (argv without argv[0]): its status and stderr.
std::pair<int, std::string> parse(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& x : args) argv.push_back(x.data());
  ::testing::internal::CaptureStderr();
  const int status = run_cli(app, static_cast<int>(argv.size()), argv.data(), {});
  return {status, ::testing::internal::GetCapturedStderr()};
}

TEST(RunCli, ExitStatusPerKindOfError) {
  EXPECT_EQ(run([] {}).first, 0);
  EXPECT_EQ(run([] { throw DataError("a.csv", "line 3", "text", "empty"); }).first, 2);
  EXPECT_EQ(run([] { throw std::invalid_argument("--x: bad"); }).first, 2);
  EXPECT_EQ(run([] { throw std::runtime_error("disk full"); }).first, 1);
  // A finished command's own status (a launcher's ranks, 128 + signal), without an error line.
  const auto [exit_status, exit_err] = run([] { throw ExitRequest(130); });
  EXPECT_EQ(exit_status, 130);
  EXPECT_EQ(exit_err, "");
  const auto [status, err] = run([] { DIALTREE_CHECK(1 > 2, "heads differ"); });
  EXPECT_EQ(status, kExitInternalError);
  EXPECT_EQ(err.rfind("error: internal error at tests/cli/app_test.cpp:", 0), 0u) << err;
  EXPECT_NE(err.find("check '1 > 2' failed: heads differ (a bug in dialtree"), std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// cli/common_options.h: --model and --out, declared once for every command. The help text is the
// kind's words plus the detail; both are required unless the caller says otherwise; --model's
// folder is checked at parse time.
TEST(CommonOptions, ModelAndOut) {
  CLI::App app("test");
  std::string model, out, tokenizer, report;
  CLI::App* a = app.add_subcommand("a");
  const CLI::Option* m = add_model_option(a, model, ModelFolder::Bundle, kBundleExample);
  const CLI::Option* o = add_out_option(a, out, OutputKind::Folder, "created");
  EXPECT_EQ(m->get_description(), "Model bundle folder (e.g. runs/pretrain-intent-pseudo/final)");
  EXPECT_EQ(o->get_description(), "Output folder (created)");
  EXPECT_TRUE(m->get_required());
  EXPECT_TRUE(o->get_required());
  CLI::App* b = app.add_subcommand("b");
  EXPECT_EQ(add_model_option(b, tokenizer, ModelFolder::Tokenizer, "")->get_description(),
            "Tokenizer folder");
  EXPECT_FALSE(add_out_option(b, report, OutputKind::File, "")->required(false)->get_required());
  EXPECT_EQ(b->get_option("--out")->get_description(), "Output file");

  const auto [status, err] = parse(app, {"b", "--model", "/nonexistent/tokenizer"});
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("no tokenizer folder at '/nonexistent/tokenizer'"), std::string::npos) << err;
}

// --device, --tasks and --data-dir, declared once for every command: the help from the one
// constant or table, --device's spelling checked at parse time (flag and environment twin alike),
// --tasks' default the intent tasks, --data-dir also spelled --data.
TEST(CommonOptions, DeviceTasksAndDataDir) {
  CLI::App app("test");
  std::string device = "auto", tasks, data, recipe_device, intent_tasks, score_data;
  CLI::App* a = app.add_subcommand("a");
  const CLI::Option* d = add_device_option(a, device, "");
  const CLI::Option* t = add_tasks_option(a, tasks, readers::TaskSet::Probe, "intent or tagging");
  const CLI::Option* dd = add_data_dir_option(a, data, "");
  EXPECT_EQ(d->get_description(), kDeviceHelp);
  EXPECT_EQ(d->get_envname(), "DIALTREE_DEVICE");
  EXPECT_EQ(d->get_default_str(), "auto");
  EXPECT_EQ(tasks, "banking,clinc,hwu");
  EXPECT_EQ(t->get_default_str(), "banking,clinc,hwu");
  EXPECT_EQ(t->get_description(),
            "Comma-separated tasks (intent or tagging): banking, clinc, hwu, restaurant8k, dstc8 "
            "(or dstc8_sgd), top");
  EXPECT_EQ(dd->get_description(),
            "DialoGLUE data folder (default: $DIALTREE_DATA, else ../shared/data/dialoglue)");
  CLI::App* b = app.add_subcommand("b");
  EXPECT_EQ(add_device_option(b, recipe_device, "the recipe's key")->get_description(),
            std::string(kDeviceHelp) + " (the recipe's key)");
  EXPECT_EQ(add_tasks_option(b, intent_tasks, readers::TaskSet::Intent, "")->get_description(),
            "Comma-separated tasks: banking, clinc, hwu");
  EXPECT_EQ(add_data_dir_option(b, score_data, "for --word-tags")->get_description(),
            "DialoGLUE data folder (for --word-tags; default: $DIALTREE_DATA, else "
            "../shared/data/dialoglue)");

  auto [status, err] = parse(app, {"a", "--device", "cuda:1", "--data", "d1", "--tasks", "top"});
  EXPECT_EQ(status, 0) << err;
  EXPECT_EQ(device, "cuda:1");
  EXPECT_EQ(data, "d1");
  EXPECT_EQ(tasks, "top");
  std::tie(status, err) = parse(app, {"a", "--data-dir", "d2"});
  EXPECT_EQ(status, 0) << err;
  EXPECT_EQ(data, "d2");
  std::tie(status, err) = parse(app, {"a", "--device", "gpu"});
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("--device: \"gpu\" is not a device: use auto, cpu, cuda or cuda:N"),
            std::string::npos)
      << err;
  ::setenv("DIALTREE_DEVICE", "CPU", 1);
  std::tie(status, err) = parse(app, {"b"});
  ::unsetenv("DIALTREE_DEVICE");
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("DIALTREE_DEVICE=CPU (the environment twin of --device)"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace dialtree::cli
