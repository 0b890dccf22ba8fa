// The options that several commands share, each declared in one place: `--model` (the model
// bundle or tokenizer folder a command reads), `--out` (the file or folder it writes),
// `--device` (where the model runs), `--tasks` (DialoGLUE tasks) and `--data-dir` (the DialoGLUE
// data folder). Each command gives a short detail; the helper builds the help text around it.
// Torch-free.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/check.h"
#include "common/device_spec.h"
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

/// Declares one entry of an options struct's visit() list (serve::ServerOptions, embed's
/// EmbedArgs) as add_flag_with_env() does, except two entries. `model`: add_model_option()
/// declares it (a required model bundle folder, the entry's help as its detail) with its
/// DIALTREE_MODEL environment twin. `device`: add_device_option() declares it, so it is checked
/// as every --device is. @returns the option. @throws InternalError (common/check.h) when the
/// `device` entry's help is not kDeviceHelp, the one help of --device; otherwise only as
/// CLI::App::add_option does.
template <class T>
CLI::Option* add_visited_flag(CLI::App* cmd, const char* name, T& value, const char* help) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (std::string_view(name) == "model") {
      return add_model_option(cmd, value, ModelFolder::Bundle, help)->envname(env_twin(name));
    }
    if (std::string_view(name) == "device") {
      DIALTREE_CHECK(std::string_view(help) == kDeviceHelp,
                     "the visit() entry 'device' must carry kDeviceHelp (common/device_spec.h)");
      return add_device_option(cmd, value, "");
    }
  }
  return add_flag_with_env(cmd, name, value, help);
}

}  // namespace dialtree::cli
