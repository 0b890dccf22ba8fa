#include "cli/common_options.h"

#include <type_traits>
#include <variant>

namespace dialtree::cli {

namespace {

// "<lead>" or "<lead> (<detail>)": the help text of a shared option.
std::string shared_option_help(const char* lead, const std::string& detail) {
  return detail.empty() ? std::string(lead) : std::string(lead) + " (" + detail + ")";
}

}  // namespace

CLI::Option* add_model_option(CLI::App* cmd, std::string& folder, ModelFolder kind,
                              const std::string& detail) {
  const bool bundle = kind == ModelFolder::Bundle;
  return cmd
      ->add_option("--model", folder,
                   shared_option_help(bundle ? "Model bundle folder" : "Tokenizer folder", detail))
      ->required()
      ->check(existing_folder(bundle ? "model bundle" : "tokenizer"));
}

CLI::Option* add_out_option(CLI::App* cmd, std::string& path, OutputKind kind,
                            const std::string& detail) {
  return cmd
      ->add_option(
          "--out", path,
          shared_option_help(kind == OutputKind::File ? "Output file" : "Output folder", detail))
      ->required();
}

CLI::Option* add_setting_flag(CLI::App* cmd, const settings::Bound& row) {
  const settings::Info& info = *row.info;
  CLI::Option* option = std::visit(
      [&](auto* value) -> CLI::Option* {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (info.name == "model") {
            return add_model_option(cmd, *value, ModelFolder::Bundle, info.help);
          }
        }
        return cmd->add_option("--" + info.name, *value, info.help)->capture_default_str();
      },
      row.target);
  if (info.env) option->envname(env_twin(info.name));
  return option;
}

}  // namespace dialtree::cli
