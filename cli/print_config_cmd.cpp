// `dialtree print-config CONFIG [key=value ...]`: the resolved pretraining config as YAML
// (trainer/config.h, docs/training.md). Torch-free: the light `dialtree` runs it itself.
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "trainer/config.h"

namespace dialtree::cli {

void register_print_config(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
  };
  auto p = std::make_shared<Args>();
  CLI::App* print = app.add_subcommand(
      "print-config", "Print the resolved config (every key, defaults filled in) as YAML");
  print->add_option("config", p->config, "YAML config")->required();
  print->add_option("overrides", p->overrides, "key.sub=value overrides, applied in order");
  print->callback([p] {
    fmt::print("{}", trainer::dump_config(trainer::load_config(p->config, p->overrides)));
  });
}

}  // namespace dialtree::cli
