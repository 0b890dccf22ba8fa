#include "cli/common_options.h"

#include <type_traits>
#include <variant>

#include "eval/tasks.h"

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

CLI::Option* add_device_option(CLI::App* cmd, std::string& device, const std::string& detail) {
  return cmd->add_option("--device", device, shared_option_help(kDeviceHelp, detail))
      ->envname(env_twin("device"))
      ->capture_default_str()
      ->check(CLI::Validator([](std::string& value) { return device_spec_problem(value); }, ""));
}

CLI::Option* add_tasks_option(CLI::App* cmd, std::string& list, readers::TaskSet accepted,
                              const std::string& detail) {
  list = readers::join_dialoglue_task_names(readers::TaskSet::Intent, readers::TaskSpelling::Name,
                                            ",");
  return cmd
      ->add_option(
          "--tasks", list,
          shared_option_help("Comma-separated tasks", detail) + ": " +
              readers::join_dialoglue_task_names(accepted, readers::TaskSpelling::NameOrFolder))
      ->capture_default_str();
}

CLI::Option* add_data_dir_option(CLI::App* cmd, std::string& dir, const std::string& detail) {
  return cmd->add_option("--data-dir,--data", dir,
                         "DialoGLUE data folder (" +
                             (detail.empty() ? std::string() : detail + "; ") +
                             "default: $DIALTREE_DATA, else " + eval::kFallbackDialoglueDir + ")");
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
          if (info.name == "device") {
            DIALTREE_CHECK(info.help == kDeviceHelp,
                           "the settings row 'device' must carry kDeviceHelp (common/device_spec.h)");
            return add_device_option(cmd, *value, "");
          }
        }
        CLI::Option* plain = cmd->add_option("--" + info.name, *value, info.help);
        if constexpr (std::is_same_v<T, std::string>) {
          if (info.check != nullptr) {  // at parse time, so an environment twin is named
            const settings::StringCheck check = info.check;
            plain->check(CLI::Validator([check](std::string& v) { return check(v); }, ""));
          }
        }
        return plain->capture_default_str();
      },
      row.target);
  if (info.env) option->envname(env_twin(info.name));
  return option;
}

}  // namespace dialtree::cli
