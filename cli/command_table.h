// The one table of dialtree's commands (docs/performance.md, "Two executables"): per command
// path, which executable runs it, the environment defaults that `dialtree` sets before it hands
// the command to dialtree-torch, and the groups (`eval`) whose commands are rows of their own.
// The table names no registration function, since the light executable must not link the torch
// ones: each executable passes register_commands() its own registrations, and at start-up that
// checks them against the rows it runs (each row registered once, each registration a row).
// Torch-free.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace dialtree::cli {

/// Which executable runs a command line.
enum class Route {
  Light,  ///< torch-free: `dialtree` runs it itself, in milliseconds
  Torch,  ///< needs LibTorch: `dialtree` exec()s `dialtree-torch`
};

/// An environment variable that `dialtree` sets for a command before it exec()s dialtree-torch,
/// when the user set nothing: the libraries read it only when they load (libgomp, jemalloc).
struct EnvDefault {
  std::string_view variable;  ///< e.g. "MALLOC_CONF"
  std::string_view value;     ///< what it is set to, e.g. "dirty_decay_ms:-1,muzzy_decay_ms:-1"
  /// The variables that, when set, are the user's choice and leave `variable` alone (`variable`
  /// itself among them), e.g. GOMP_SPINCOUNT and OMP_WAIT_POLICY.
  std::vector<std::string_view> chosen_by;
  /// True: a variable of `chosen_by` set to "" counts as not set (jemalloc ignores an empty
  /// MALLOC_CONF); false: set to anything, "" included, is a choice.
  bool empty_is_unset;
};

/// One command of the table.
struct CommandRow {
  std::vector<std::string_view> path;  ///< the words that name it: {"eval", "score"}
  /// The executable that runs a command line starting with `path` (and, for a group, one whose
  /// next word is none of its rows: the full parser then lists them all).
  Route route;
  /// True: a command line with any word after `path` goes to dialtree-torch whatever `route`
  /// says (`version`: --verbose, in any spelling, or a typo, which the full parser knows or
  /// reports).
  bool arguments_need_torch;
  /// Not empty: the row is a group, which register_commands() creates itself with this
  /// description and which requires one of its commands (rows whose path continues this one).
  std::string_view group;
  std::vector<EnvDefault> env;  ///< set by `dialtree` before exec (exec_torch_binary, cli/app.h)
};

/// The table, in the order of `dialtree --help` (groups before their commands). See
/// cli/command_table.cpp for each environment default's reason.
const std::vector<CommandRow>& command_table();

/// "eval score": a row's path as the user types it.
std::string command_path_text(const std::vector<std::string_view>& path);

/// The row with the longest path that `args` (argv without argv[0]) begins with, word by word,
/// or nullptr when none does (an empty line, a flag such as --help first, an unknown command).
/// E.g. {"eval", "score", "--task", "hwu"} -> the row {"eval", "score"}; {"eval", "bogus"} -> the
/// group row {"eval"}.
const CommandRow* find_command(const std::vector<std::string>& args);

/// The value `env` sets: env.value, or "" when the user chose (a variable of env.chosen_by is
/// set, and not empty where env.empty_is_unset). @param getenv_fn the environment to read.
std::string env_default_value(const EnvDefault& env,
                              const std::function<const char*(const char*)>& getenv_fn);

/// The value that `variable` gets by default for the command line `args` (argv without argv[0]):
/// env_default_value() of that variable's default in find_command(args)'s row; "" when the row
/// has none, when there is no row, and when the user chose.
std::string env_default_for(const std::vector<std::string>& args, std::string_view variable,
                            const std::function<const char*(const char*)>& getenv_fn);

/// How one executable adds the command of one row.
struct Registration {
  std::vector<std::string_view> path;  ///< the row's path
  /// Adds the command named path.back() to `parent`: the app for a one-word path, else the
  /// group named by the words before it.
  std::function<void(CLI::App& parent)> add;
};

/// Adds to `app` the commands that `executable` runs, in table order: for Route::Light the rows
/// routed Light, for Route::Torch every row (dialtree-torch runs every command); groups are
/// created from their row. Run it inside run_cli() (cli/app.h), whose InternalError handling
/// reports a broken table as a bug.
/// @throws InternalError (common/check.h) when a registration's path is no row or a group's, when
///   two registrations name one row, when the light executable registers a Torch row, when a row
///   the executable runs has no registration, or when a registration does not add exactly one
///   command, named as its row.
void register_commands(CLI::App& app, Route executable,
                       const std::vector<Registration>& registrations);

}  // namespace dialtree::cli
