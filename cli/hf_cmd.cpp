// `dialtree import-hf` and `dialtree export`: Hugging Face BERT folders <-> dialtree bundles
// (model/hf_interop.h, docs/hf-interop.md).
#include <memory>
#include <string>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "model/hf_interop.h"

namespace dialtree::cli {
namespace {

struct ImportArgs {
  std::string from, out;
  model::HfImportOptions options;
};

struct ExportArgs {
  std::string model, format = "hf", out;
  bool weights_only = false;
};

}  // namespace

void register_import_hf(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import-hf",
      "Turn a Hugging Face BERT folder (config.json, model.safetensors, vocab.txt) "
      "into a dialtree bundle");
  cmd->add_option("--from", a->from, "HF model folder")
      ->required()
      ->check(existing_folder("Hugging Face model"));
  add_out_option(cmd, a->out, OutputKind::Folder, "the bundle, replaced as a whole");
  cmd->add_flag("--allow-missing", a->options.allow_missing,
                "Initialise BERT tensors the checkpoint lacks (e.g. the MLM head of a BertModel "
                "save) instead of failing; each is listed");
  cmd->add_option("--seed", a->options.seed, "Seed for the new SPACE-2 heads' initialisation");
  cmd->callback([a] {
    const model::HfImportReport r = model::import_hf(a->from, a->out, a->options);
    for (const auto& n : r.notes) fmt::print("note: {}\n", n);
    for (const auto& n : r.initialised) fmt::print("initialised: {}\n", n);
    fmt::print("imported {} tensors from {} -> {}\n", r.loaded, a->from, a->out);
  });
}

void register_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a bundle as a folder transformers or sentence-transformers can load");
  add_model_option(cmd, a->model, ModelFolder::Bundle, "");
  cmd->add_option("--format", a->format,
                  "hf (BertForPreTraining, the default) or sentence-transformers")
      ->check(CLI::IsMember({"hf", "sentence-transformers"}));
  add_out_option(cmd, a->out, OutputKind::Folder, "replaced as a whole");
  cmd->add_flag("--weights-only", a->weights_only,
                "Write no tokenizer files (needed for SentencePiece bundles, which have no "
                "transformers BERT tokenizer)");
  cmd->callback([a] {
    const auto format = a->format == "hf" ? model::HfExportFormat::kHf
                                          : model::HfExportFormat::kSentenceTransformers;
    const model::HfExportReport r = model::export_hf(a->model, a->out, format, a->weights_only);
    for (const auto& n : r.side) {
      fmt::print("not loadable by transformers, kept in {}: {}\n", model::kHfExtraWeightsFile, n);
    }
    fmt::print("exported {} tensors and {} files ({} format) -> {}\n", r.exported.size(),
               r.files.size(), a->format, a->out);
  });
}

}  // namespace dialtree::cli
