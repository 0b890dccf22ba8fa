// `dialtree print-config CONFIG [key=value ...]`: the resolved pretraining config as YAML
// (trainer/config.h, docs/training.md). `dialtree print-config --settings-table NAME`: the
// Markdown table of a settings table (common/settings.h), as docs/ holds it. Torch-free: the
// light `dialtree` runs it itself.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/embed_options.h"
#include "common/settings.h"
#include "eval/eval_config.h"
#include "model/config.h"
#include "serve/options.h"
#include "trainer/config.h"

namespace dialtree::cli {

const std::vector<std::string>& settings_table_names() {
  static const std::vector<std::string> names = {"trainer", "finetune", "model", "serve", "embed"};
  return names;
}

/// The Markdown table of `rows` bound to a default-constructed Owner: the defaults in words.
template <class Owner>
std::string defaults_table(const std::vector<settings::Setting<Owner>>& rows,
                           const settings::TableStyle& style = {}) {
  const Owner defaults;  // named: a Bound must not point into a temporary (common/settings.h)
  return settings::markdown_table(settings::view(rows, defaults), style);
}

std::string settings_table(const std::string& name) {
  // The trainer's defaults are a config's: threads and data_seed are resolved from the machine
  // and seed.
  if (name == "trainer") return defaults_table(trainer::pretrain_settings());
  if (name == "finetune") return defaults_table(eval::finetune_settings());
  if (name == "model") return defaults_table(model::encoder_settings());
  const settings::TableStyle flags{/*flags=*/true};
  if (name == "serve") return defaults_table(serve::server_settings(), flags);
  if (name == "embed") return defaults_table(embed_settings(), flags);
  throw std::invalid_argument("no settings table '" + name + "'");
}

void register_print_config(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
    std::string table;
  };
  auto p = std::make_shared<Args>();
  CLI::App* print = app.add_subcommand(
      "print-config", "Print the resolved config (every key, defaults filled in) as YAML");
  CLI::Option* config = print->add_option("config", p->config, "YAML config");
  print->add_option("overrides", p->overrides, "key.sub=value overrides, applied in order");
  print
      ->add_option("--settings-table", p->table,
                   "Print the Markdown table of a settings table instead (as docs/ shows it)")
      ->check(CLI::IsMember(settings_table_names()));
  print->callback([p, config] {
    if (!p->table.empty()) {
      if (config->count() > 0) {
        throw std::invalid_argument("--settings-table prints a table and takes no config or "
                                    "overrides, got '" + p->config + "'");
      }
      fmt::print("{}", settings_table(p->table));
      return;
    }
    if (config->count() == 0) throw CLI::RequiredError("config");
    fmt::print("{}", trainer::dump_config(trainer::load_config(p->config, p->overrides)));
  });
}

}  // namespace dialtree::cli
