#include "cli/command_table.h"

#include <cstddef>

#include "common/check.h"

namespace dialtree::cli {

namespace {

// serve: OpenMP threads of a finished parallel region spin 30x shorter than libgomp's default
// before they sleep, which leaves the CPUs to the HTTP threads between forward passes
// (bench/README.md, server). A wait policy of the user's sets its own spin, so it counts as a
// choice too. libgomp reads the variable only when it loads, hence `dialtree` sets it.
const EnvDefault kServeSpinCount{
    "GOMP_SPINCOUNT", "10000", {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"}, /*empty_is_unset=*/false};

// train and eval dialoglue: jemalloc keeps the pages a training step frees instead of handing
// them back to the kernel and faulting them in again on the next step (docs/build.md P13: the
// language stage ran 3x faster, fine-tuning 3-4x; fine-tuning's varied batch shapes fragment the
// kept pages, so its loop releases them every 50 steps). jemalloc reads the variable only when
// it starts, hence `dialtree` sets it.
const EnvDefault kTrainingMallocConf{
    "MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1", {"MALLOC_CONF"}, /*empty_is_unset=*/true};

// True when `args` begins with the words of `path`.
bool starts_with_path(const std::vector<std::string>& args,
                      const std::vector<std::string_view>& path) {
  if (args.size() < path.size()) return false;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (args[i] != path[i]) return false;
  }
  return true;
}

// The row whose path is exactly `path`, or nullptr.
const CommandRow* row_of_path(const std::vector<std::string_view>& path) {
  for (const CommandRow& row : command_table()) {
    if (row.path == path) return &row;
  }
  return nullptr;
}

// The commands added to `parent` so far, in order.
std::vector<CLI::App*> table_children(CLI::App& parent) {
  return parent.get_subcommands([](CLI::App*) { return true; });
}

// The command that a row's command is added to: `app`, or the group named by the path's words
// before the last.
CLI::App& parent_of_row(CLI::App& app, const CommandRow& row) {
  CLI::App* parent = &app;
  for (std::size_t i = 0; i + 1 < row.path.size(); ++i) {
    CLI::App* next = nullptr;
    for (CLI::App* child : table_children(*parent)) {
      if (child->get_name() == row.path[i]) next = child;
    }
    DIALTREE_CHECK(next != nullptr, "'" + command_path_text(row.path) +
                                        "' comes before its group '" + std::string(row.path[i]) +
                                        "' in the command table");
    parent = next;
  }
  return *parent;
}

}  // namespace

const std::vector<CommandRow>& command_table() {
  // The order is that of `dialtree --help` and of each group's commands.
  static const std::vector<CommandRow> table = {
      // {path}, route, arguments_need_torch, group description, {environment defaults}
      {{"sts"}, Route::Light, false, "", {}},
      {{"tokenizer"}, Route::Light, false, "", {}},
      {{"print-config"}, Route::Light, false, "", {}},
      {{"plot"}, Route::Light, false, "", {}},
      {{"eval"}, Route::Torch, false, "DialoGLUE evaluation and the representation probe", {}},
      {{"eval", "score"}, Route::Light, false, "", {}},
      {{"eval", "words"}, Route::Light, false, "", {}},
      {{"eval", "dialoglue"}, Route::Torch, false, "", {kTrainingMallocConf}},
      {{"eval", "probe"}, Route::Torch, false, "", {}},
      {{"eval", "pseudo-label"}, Route::Torch, false, "", {}},
      {{"version"}, Route::Light, true, "", {}},  // --verbose reports LibTorch's runtime
      {{"embed"}, Route::Torch, false, "", {}},
      {{"serve"}, Route::Torch, false, "", {kServeSpinCount}},
      {{"export"}, Route::Torch, false, "", {}},
      {{"import-hf"}, Route::Torch, false, "", {}},
      {{"train"}, Route::Torch, false, "", {kTrainingMallocConf}},
  };
  return table;
}

std::string command_path_text(const std::vector<std::string_view>& path) {
  std::string text;
  for (std::string_view word : path) text += (text.empty() ? "" : " ") + std::string(word);
  return text;
}

const CommandRow* find_command(const std::vector<std::string>& args) {
  const CommandRow* found = nullptr;
  for (const CommandRow& row : command_table()) {
    if (starts_with_path(args, row.path) &&
        (found == nullptr || row.path.size() > found->path.size())) {
      found = &row;
    }
  }
  return found;
}

std::string env_default_value(const EnvDefault& env,
                              const std::function<const char*(const char*)>& getenv_fn) {
  for (std::string_view var : env.chosen_by) {
    const char* user = getenv_fn(std::string(var).c_str());
    if (user != nullptr && !(env.empty_is_unset && *user == '\0')) return "";
  }
  return std::string(env.value);
}

std::string env_default_for(const std::vector<std::string>& args, std::string_view variable,
                            const std::function<const char*(const char*)>& getenv_fn) {
  const CommandRow* row = find_command(args);
  if (row == nullptr) return "";
  for (const EnvDefault& env : row->env) {
    if (env.variable == variable) return env_default_value(env, getenv_fn);
  }
  return "";
}

void register_commands(CLI::App& app, Route executable,
                       const std::vector<Registration>& registrations) {
  const std::vector<CommandRow>& table = command_table();
  const char* const who = executable == Route::Light ? "dialtree" : "dialtree-torch";
  std::vector<const Registration*> by_row(table.size(), nullptr);
  for (const Registration& reg : registrations) {
    const std::string text = command_path_text(reg.path);
    const CommandRow* row = row_of_path(reg.path);
    DIALTREE_CHECK(row != nullptr, "'" + text +
                                       "' is registered but has no row in the command "
                                       "table (cli/command_table.cpp)");
    DIALTREE_CHECK(row->group.empty(), "'" + text + "' is a group, which the table creates");
    DIALTREE_CHECK(executable == Route::Torch || row->route == Route::Light,
                   "'" + text + "' is routed to dialtree-torch, yet " + who + " registers it");
    const auto index = static_cast<std::size_t>(row - table.data());
    DIALTREE_CHECK(by_row[index] == nullptr, "'" + text + "' is registered twice");
    by_row[index] = &reg;
  }
  for (std::size_t i = 0; i < table.size(); ++i) {
    const CommandRow& row = table[i];
    const std::string text = command_path_text(row.path);
    CLI::App& parent = parent_of_row(app, row);
    if (!row.group.empty()) {
      parent.add_subcommand(std::string(row.path.back()), std::string(row.group))
          ->require_subcommand(1);
      continue;
    }
    if (executable == Route::Light && row.route != Route::Light) continue;
    DIALTREE_CHECK(by_row[i] != nullptr, "'" + text + "' has no registration in " + who);
    const std::size_t before = table_children(parent).size();
    by_row[i]->add(parent);
    const std::vector<CLI::App*> after = table_children(parent);
    DIALTREE_CHECK(after.size() == before + 1 && after.back()->get_name() == row.path.back(),
                   "registering '" + text + "' must add exactly one command, named '" +
                       std::string(row.path.back()) + "'");
  }
}

}  // namespace dialtree::cli
