// The options that several commands share, each declared in one place: `--model` (the model
// bundle or tokenizer folder a command reads) and `--out` (the file or folder it writes). Each
// command gives a short detail; the helper builds the help text around it. Torch-free.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/settings.h"

namespace dialtree::cli {

/// The example of a model bundle folder that help texts give (add_model_option's detail).
inline constexpr const char* kBundleExample = "e.g. runs/pretrain-intent-pseudo/final";

/// What a `--model` folder holds: it starts the help text and names the folder in errors.
enum class ModelFolder {
  Bundle,     ///< "Model bundle folder"; a missing one: "no model bundle folder at 'X'"
  Tokenizer,  ///< "Tokenizer folder"; a missing one: "no tokenizer folder at 'X'"
};

/// Declares `--model` on `cmd`, bound to `folder`: required (call required(false) on the result
/// where another flag can stand in for it) and checked at parse time by existing_folder(), so a
/// missing folder is bad usage (status 2) before anything loads. Help: the kind's words ("Model
/// bundle folder"), then `detail` in parentheses when not empty, e.g. detail "e.g.
/// runs/pretrain-intent-pseudo/final". @returns the option, for further settings (an
/// environment twin, required(false)). Throws only as CLI::App::add_option does (a flag
/// declared twice: CLI::OptionAlreadyAdded).
CLI::Option* add_model_option(CLI::App* cmd, std::string& folder, ModelFolder kind,
                              const std::string& detail);

/// What a command writes under `--out`: it starts the help text.
enum class OutputKind {
  File,    ///< "Output file"
  Folder,  ///< "Output folder"
};

/// Declares `--out` on `cmd`, bound to `path`: required (call required(false) on the result
/// where the output is optional). Help: "Output file" or "Output folder", then `detail` in
/// parentheses when not empty (how it is written, what it holds), e.g. detail ".jsonl, written
/// atomically". The checks of the path (not an input, a writable folder) stay with each command,
/// which knows its inputs. @returns the option. Throws only as CLI::App::add_option does.
CLI::Option* add_out_option(CLI::App* cmd, std::string& path, OutputKind kind,
                            const std::string& detail);

/// Declares the flag of one settings row (serve::server_settings(), embed_settings()):
/// `--name` bound to the row's member with its help and its default shown in --help, and its
/// DIALTREE_* environment twin when the row has one (the flag wins over the environment). The
/// row `model` goes through add_model_option() (a required, existing model bundle folder; the
/// row's help is its detail). @returns the option. Throws only as CLI::App::add_option does.
CLI::Option* add_setting_flag(CLI::App* cmd, const settings::Bound& row);

/// add_setting_flag() for every row of `rows`, bound to `options` (which must outlive `cmd`'s
/// parsing: hold it in a shared_ptr the callback keeps), in table order (--help order).
template <class Owner>
void add_setting_flags(CLI::App* cmd, const std::vector<settings::Setting<Owner>>& rows,
                       Owner& options) {
  for (const settings::Bound& b : settings::bind(rows, options)) add_setting_flag(cmd, b);
}

}  // namespace dialtree::cli
