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

std::string settings_table(const std::string& name) {
  using settings::markdown_table;
  using settings::view;
  if (name == "trainer") {
    // The defaults a config gets: threads and data_seed are resolved from the machine and seed.
    return markdown_table(view(trainer::pretrain_settings(), trainer::PretrainConfig{}));
  }
  if (name == "finetune")
    return markdown_table(view(eval::finetune_settings(), eval::FinetuneOptions{}));
  if (name == "model")
    return markdown_table(view(model::encoder_settings(), model::EncoderConfig{}));
  const settings::TableStyle flags{/*flags=*/true};
  if (name == "serve") {
    return markdown_table(view(serve::server_settings(), serve::ServerOptions{}), flags);
  }
  if (name == "embed") return markdown_table(view(embed_settings(), EmbedArgs{}), flags);
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
