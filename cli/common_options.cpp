#include "cli/common_options.h"

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

}  // namespace dialtree::cli
