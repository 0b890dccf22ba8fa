// cli/command_table: the one table of commands. Its rows agree with each other and with
// route_for(); register_commands() refuses registrations that do not match the rows an
// executable runs; and both real executables register every row they run (each row's --help).
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/app.h"
#include "cli/command_table.h"
#include "common/check.h"
#include "process_util.h"
#include "test_paths.h"

namespace dialtree::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Path = std::vector<std::string_view>;

// The names of `app`'s commands, in order.
std::vector<std::string> names_of(CLI::App& app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// A registration of `path` that adds an empty command named as its last word.
Registration stub(Path path) {
  const std::string name(path.back());
  return {std::move(path), [name](CLI::App& parent) { parent.add_subcommand(name, "stub"); }};
}

// The InternalError's message of register_commands(), or "" when it registers.
std::string register_error(Route executable, const std::vector<Registration>& registrations) {
  CLI::App app;
  try {
    register_commands(app, executable, registrations);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

// Stub registrations of every row routed `route` (groups excluded).
std::vector<Registration> stubs_of(Route route) {
  std::vector<Registration> out;
  for (const CommandRow& row : command_table()) {
    if (row.group.empty() && row.route == route) out.push_back(stub(row.path));
  }
  return out;
}

TEST(CommandTable, RowsAgreeWithEachOtherAndWithRouteFor) {
  std::map<std::string, const CommandRow*> seen;
  for (const CommandRow& row : command_table()) {
    const std::string text = command_path_text(row.path);
    ASSERT_FALSE(row.path.empty());
    EXPECT_TRUE(seen.emplace(text, &row).second) << text << " has two rows";
    if (row.path.size() > 1) {  // its group comes first
      const auto group = seen.find(command_path_text(Path(row.path.begin(), row.path.end() - 1)));
      ASSERT_NE(group, seen.end()) << text;
      EXPECT_FALSE(group->second->group.empty()) << text;
    }
    if (!row.group.empty()) {
      EXPECT_EQ(row.route, Route::Torch) << text << ": the full parser lists the group's commands";
      EXPECT_TRUE(row.env.empty()) << text;
    }
    for (const EnvDefault& env : row.env) {
      EXPECT_NE(std::find(env.chosen_by.begin(), env.chosen_by.end(), env.variable),
                env.chosen_by.end())
          << text << ": a value of the user's for " << env.variable << " stands";
    }
    const std::vector<std::string> args(row.path.begin(), row.path.end());
    EXPECT_EQ(route_for(args), row.route) << text;
    EXPECT_EQ(find_command(args), &row) << text;
  }
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(command_path_text({"eval", "pseudo-label"}), "eval pseudo-label");
}

TEST(CommandTable, FindsTheLongestPathALineBeginsWith) {
  using V = std::vector<std::string>;
  const CommandRow* score = find_command(V{"eval", "score", "--task", "hwu"});
  ASSERT_NE(score, nullptr);
  EXPECT_THAT(score->path, ElementsAre("eval", "score"));
  const CommandRow* group = find_command(V{"eval", "bogus"});
  ASSERT_NE(group, nullptr);
  EXPECT_THAT(group->path, ElementsAre("eval"));
  EXPECT_EQ(find_command(V{"eval", "--help", "score"})->path.size(), 1u);
  for (const V& none : {V{}, V{"--help"}, V{"evaluate"}, V{"score"}, V{"--model", "serve"}}) {
    EXPECT_EQ(find_command(none), nullptr) << ::testing::PrintToString(none);
  }
}

TEST(CommandTable, TheLightRegistrationsAreTheLightRows) {
  CLI::App app;
  register_commands(app, Route::Light, light_registrations({}));
  EXPECT_THAT(names_of(app),
              ElementsAre("sts", "tokenizer", "print-config", "plot", "eval", "version"));
  EXPECT_THAT(names_of(*app.get_subcommand("eval")), ElementsAre("score", "words"));
  EXPECT_EQ(app.get_subcommand("eval")->get_description(),
            "DialoGLUE evaluation and the representation probe");
  EXPECT_EQ(app.get_subcommand("eval")->get_require_subcommand_min(), 1u);
}

TEST(CommandTable, EveryTorchRowInTableOrderWhenEachIsRegisteredOnce) {
  std::vector<Registration> all = light_registrations({});
  for (Registration& r : stubs_of(Route::Torch)) all.push_back(std::move(r));
  CLI::App app;
  register_commands(app, Route::Torch, all);
  EXPECT_THAT(names_of(app), ElementsAre("sts", "tokenizer", "print-config", "plot", "eval",
                                         "version", "embed", "serve", "export", "import-hf",
                                         "train"));
  EXPECT_THAT(names_of(*app.get_subcommand("eval")),
              ElementsAre("score", "words", "dialoglue", "probe", "pseudo-label"));
}

TEST(CommandTable, RefusesRegistrationsThatDoNotMatchTheRows) {
  using Regs = std::vector<Registration>;
  const Regs light = stubs_of(Route::Light);
  EXPECT_EQ(register_error(Route::Light, light), "");
  struct Case {
    Route executable;
    std::function<void(Regs&)> change;  // of the light rows' registrations
    std::string message;
  };
  const std::vector<Case> cases = {
      {Route::Torch, [](Regs&) {}, "'eval dialoglue' has no registration in dialtree-torch"},
      {Route::Light, [](Regs& r) { r.pop_back(); }, "'version' has no registration in dialtree"},
      {Route::Light, [](Regs& r) { r.push_back(stub({"bogus"})); },
       "'bogus' is registered but has no row in the command table"},
      {Route::Light, [](Regs& r) { r.push_back(stub({"sts"})); }, "'sts' is registered twice"},
      {Route::Light, [](Regs& r) { r.push_back(stub({"embed"})); },
       "'embed' is routed to dialtree-torch, yet dialtree registers it"},
      {Route::Light, [](Regs& r) { r.push_back(stub({"eval"})); },
       "'eval' is a group, which the table creates"},
      {Route::Light,
       [](Regs& r) { r.front().add = [](CLI::App& app) { app.add_subcommand("stats", "x"); }; },
       "registering 'sts' must add exactly one command, named 'sts'"},
      {Route::Light, [](Regs& r) { r.front().add = [](CLI::App&) {}; },
       "registering 'sts' must add exactly one command, named 'sts'"},
  };
  for (const Case& c : cases) {
    Regs regs = light;
    c.change(regs);
    EXPECT_THAT(register_error(c.executable, regs), HasSubstr(c.message)) << c.message;
  }
}

// The real executables: each row's --help is answered (status 0, its usage line), by `dialtree`
// for the light rows and by dialtree-torch for the others, whose start-up checks the
// registrations against the table (status 70 and "internal error" otherwise).
TEST(CommandTable, BothExecutablesAnswerEveryRowsHelp) {
  namespace process = dialtree::testing::process;
  dialtree::testing::TempDir dir;
  for (const CommandRow& row : command_table()) {
    std::vector<std::string> args(row.path.begin(), row.path.end());
    args.push_back("--help");
    const process::Result r = process::run(args, dir.path().string());
    const std::string text = command_path_text(row.path);
    EXPECT_EQ(r.status, 0) << text << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("dialtree " + text)) << text;
  }
}

}  // namespace
}  // namespace dialtree::cli
