// Registration of the dialtree subcommands. Each cli/<name>_cmd.cpp adds one subcommand
// group to the CLI11 app; it parses flags and calls the libraries, nothing else. Which command
// each function registers, and which executable calls it, is the command table's
// (cli/command_table.h): light_registrations() (cli/app.h) and cli/torch_main.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/settings_fwd.h"

namespace dialtree::cli {

/// The environment twin of a flag: "max-batch-tokens" -> "DIALTREE_MAX_BATCH_TOKENS".
using settings::env_twin;

/// CLI11 check of a folder flag (`--model`): the folder must exist before anything loads from
/// it, so a wrong path is bad usage (status 2) with "no <what> folder at 'X'" or "'X' is a
/// file, not a <what> folder", the environment twin included (cli/app.cpp).
CLI::Validator existing_folder(const std::string& what);

/// Refuses an output that is the same file as one of the command's inputs (is_same_file: links
/// and other spellings count), before anything is written: "<out_flag> '<out>' is the same file
/// as <input_what> '<input>'; refusing to overwrite an input". @throws std::invalid_argument
/// (status 2).
void refuse_overwriting_input(const std::string& out_flag, const std::string& out,
                              const std::string& input_what, const std::string& input);

/// `dialtree eval score` (DialoGLUE scoring, torch-free) on the `eval` group (cli/score_cmd.cpp).
void register_eval_score(CLI::App& eval);
/// `dialtree eval words` (a tagging task's words and tags as JSONL, torch-free) on the `eval`
/// group (cli/score_cmd.cpp).
void register_eval_words(CLI::App& eval);
/// `dialtree eval dialoglue` (fine-tuning, torch) on the `eval` group (cli/eval_cmd.cpp).
void register_eval_dialoglue(CLI::App& eval);
/// `dialtree eval probe` (the representation probe, torch) on the `eval` group
/// (cli/eval_cmd.cpp).
void register_eval_probe(CLI::App& eval);
/// `dialtree eval pseudo-label` (torch) on the `eval` group (cli/eval_cmd.cpp).
void register_eval_pseudo_label(CLI::App& eval);
/// `dialtree embed --model DIR`: offline batch embeddings (cli/embed_cmd.cpp).
void register_embed(CLI::App& app);
/// `dialtree serve --model DIR`: the embedding HTTP server (cli/serve_cmd.cpp).
void register_serve(CLI::App& app);
/// `dialtree export --model BUNDLE --format hf|sentence-transformers --out DIR`.
void register_export(CLI::App& app);
/// `dialtree import-hf --from DIR --out BUNDLE`.
void register_import_hf(CLI::App& app);
/// `dialtree plot RUN_DIR... --out DIR`: training curves and score charts (cli/plot_cmd.cpp).
void register_plot(CLI::App& app);
/// `dialtree sts convert|score`.
void register_sts(CLI::App& app);
/// `dialtree tokenizer train|encode|decode`.
void register_tokenizer(CLI::App& app);
/// `dialtree train CONFIG [key=value ...]` (cli/train_cmd.cpp).
void register_train(CLI::App& app);
/// `dialtree print-config CONFIG [key=value ...]` (torch-free, cli/print_config_cmd.cpp).
void register_print_config(CLI::App& app);
/// The names `dialtree print-config --settings-table` takes: trainer, finetune, model, serve,
/// embed.
const std::vector<std::string>& settings_table_names();
/// The Markdown table (settings::markdown_table) of the settings table `name`, with the
/// defaults of a default-constructed options struct; the tables in docs/ are its output
/// (tests/cli/settings_docs_test.cpp). @throws std::invalid_argument for another name.
std::string settings_table(const std::string& name);
/// `dialtree version [--verbose]`: dialtree's version and the LibTorch it was built with;
/// --verbose calls `details` (the runtime report of cli/torch_runtime.cpp) after them.
void register_version(CLI::App& app, std::function<void()> details);
/// `version --verbose`'s report, printed from inside dialtree-torch: LibTorch's version and
/// threads, the BLAS library, its kernel set and threads and how it was chosen, the CPU and
/// native bf16 (cli/torch_runtime.cpp).
void print_runtime_details();

/// Sets LibTorch's intra-op thread count to requested_intra_op_threads() (cli/app.h: it
/// defaults to 1 on KVM machines otherwise). @throws std::invalid_argument as that does.
void configure_threads();
/// Sets LibTorch's intra-op thread count to `n` (a flag's value, e.g. serve --num-threads).
/// @throws std::invalid_argument if n is outside [1, CPUs].
void set_num_threads(int n);
/// Sends spdlog's default logger to stderr (stdout stays for data: summaries, vectors), as
/// "level: message", or with a timestamp when `timestamps` (long-running commands).
void log_to_stderr(bool timestamps = false);

}  // namespace dialtree::cli
