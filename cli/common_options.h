// The options that several commands share, each declared in one place: `--model` (the model
// bundle or tokenizer folder a command reads), `--out` (the file or folder it writes),
// `--device` (where the model runs), `--tasks` (DialoGLUE tasks) and `--data-dir` (the DialoGLUE
// data folder). Each command gives a short detail; the helper builds the help text around it.
// Torch-free.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/check.h"
#include "common/device_spec.h"
#include "common/settings.h"
#include "readers/dialoglue_tasks.h"

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

/// Declares `--device` on `cmd`, bound to `device`, with its environment twin DIALTREE_DEVICE (the
/// flag wins) and the bound value as the default shown in --help (none when empty). Help:
/// kDeviceHelp (common/device_spec.h), then `detail` in parentheses when not empty. The spelling
/// is checked at parse time with device_spec_problem() (common/device_spec.h), from the flag or
/// the variable, so a bad one is bad usage (status 2) before anything loads, e.g. "--device:
/// \"gpu\" is not a device: use auto, cpu, cuda or cuda:N"; whether the machine has that GPU
/// is checked when the command resolves it (model/device.h). docs/gpu.md, "Choosing the device".
/// @returns the option. Throws only as CLI::App::add_option does.
CLI::Option* add_device_option(CLI::App* cmd, std::string& device, const std::string& detail);

/// Declares `--tasks` on `cmd`, bound to `list` (comma-separated DialoGLUE task names), and sets
/// `list` to the default, the intent tasks ("banking,clinc,hwu"), shown in --help. Help:
/// "Comma-separated tasks", then `detail` in parentheses when not empty, then ": " and the tasks
/// of `accepted` from the task table (readers/dialoglue_tasks.h), each by name or data folder
/// ("dstc8 (or dstc8_sgd)"). Which tasks a command takes, and what its error says of another, stay
/// with the command, which checks the list before it reads any data. @returns the option. Throws
/// only as CLI::App::add_option does.
CLI::Option* add_tasks_option(CLI::App* cmd, std::string& list, readers::TaskSet accepted,
                              const std::string& detail);

/// Declares `--data-dir`, also spelled `--data`, on `cmd`, bound to `dir`: the DialoGLUE data
/// folder. Help: "DialoGLUE data folder (", `detail` and "; " when not empty, then "default:
/// $DIALTREE_DATA, else ../shared/data/dialoglue)" (eval::kFallbackDialoglueDir). Empty means
/// that default: the command resolves the folder with eval::resolve_data_dir() (eval/tasks.h),
/// which checks that it holds DialoGLUE data and says where it looked, before any data is read.
/// @returns the option. Throws only as CLI::App::add_option does.
CLI::Option* add_data_dir_option(CLI::App* cmd, std::string& dir, const std::string& detail);

/// Declares the flag of one settings row (serve::server_settings(), embed_settings()):
/// `--name` bound to the row's member with its help and its default shown in --help, and its
/// DIALTREE_* environment twin when the row has one (the flag wins over the environment). The
/// row `model` goes through add_model_option() (a required, existing model bundle folder; the
/// row's help is its detail); the row `device` through add_device_option() (checked at parse
/// time as every --device is). A row's string check runs at parse time too, so a bad value from
/// the environment twin is blamed on the variable. @returns the option. @throws InternalError (common/check.h) when
/// the `device` row's help is not kDeviceHelp, the one help of --device; otherwise only as
/// CLI::App::add_option does.
CLI::Option* add_setting_flag(CLI::App* cmd, const settings::Bound& row);

/// add_setting_flag() for every row of `rows`, bound to `options` (which must outlive `cmd`'s
/// parsing: hold it in a shared_ptr the callback keeps), in table order (--help order).
template <class Owner>
void add_setting_flags(CLI::App* cmd, const std::vector<settings::Setting<Owner>>& rows,
                       Owner& options) {
  for (const settings::Bound& b : settings::bind(rows, options)) add_setting_flag(cmd, b);
}

}  // namespace dialtree::cli
