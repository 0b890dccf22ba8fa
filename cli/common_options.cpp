#include "cli/common_options.h"

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

}  // namespace dialtree::cli
