// cli/app: run_cli's exit statuses, in process: 0, 2 for bad usage or input, 70 for a broken
// internal check (a bug), 1 for anything else; one "error: ..." line on stderr.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/common_options.h"
#include "common/check.h"
#include "common/error.h"

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

  std::vector<std::string> args = {"prog", "b", "--model", "/nonexistent/tokenizer"};
  std::vector<char*> argv;
  for (auto& x : args) argv.push_back(x.data());
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_cli(app, static_cast<int>(argv.size()), argv.data(), {}), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                "no tokenizer folder at '/nonexistent/tokenizer'"),
            std::string::npos);
}

}  // namespace
}  // namespace dialtree::cli
