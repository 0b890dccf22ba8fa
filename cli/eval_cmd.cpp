// The torch side of `dialtree eval`, each subcommand registered by its own function
// (cli/commands.h): `eval dialoglue` (fine-tune and predict), `eval probe` (frozen-embedding
// representation probe, eval/probe_model.h) and `eval pseudo-label` (the probe's classifier
// labels the unlabelled training texts for the intent stage, eval/pseudo_label.h). `eval score`
// and `eval words` are torch-free, in cli/score_cmd.cpp.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "common/temp_cleanup.h"
#include "eval/dialoglue.h"
#include "eval/eval_config.h"
#include "eval/metrics.h"
#include "eval/probe_model.h"
#include "eval/pseudo_label.h"
#include "eval/results_file.h"
#include "eval/submission.h"
#include "eval/tasks.h"
#include "model/bundle.h"
#include "model/device.h"
#include "model/encoder.h"
#include "readers/dialoglue_tasks.h"
#include "sts/format.h"

namespace dialtree::cli {

namespace {

namespace fs = std::filesystem;
using readers::join_dialoglue_task_names;
using readers::TaskSet;
using readers::TaskSpelling;

/// The folders prepare_output_dir() created, outermost first. Unless keep() is called, the
/// destructor removes them again while they are empty, deepest first, so that a command that
/// fails after preparing its output folder leaves nothing behind (docs/failure-cases.md B8).
/// So does a Ctrl-C or SIGTERM: the folders are registered with the signal cleanup
/// (common/temp_cleanup.h), whose rmdir() leaves a folder that holds anything.
/// A folder that existed before is never in the list.
class CreatedFolders {
 public:
  explicit CreatedFolders(std::vector<fs::path> created) : created_(std::move(created)) {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {  // deepest first
      slots_.push_back(register_temp_path(it->c_str(), TempKind::Directory));
    }
  }
  CreatedFolders(CreatedFolders&& other) noexcept
      : created_(std::move(other.created_)), slots_(std::move(other.slots_)) {
    other.created_.clear();
    other.slots_.clear();
  }
  CreatedFolders(const CreatedFolders&) = delete;
  CreatedFolders& operator=(const CreatedFolders&) = delete;
  CreatedFolders& operator=(CreatedFolders&&) = delete;
  ~CreatedFolders() {
    unregister();
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      std::error_code ec;
      if (!fs::is_empty(*it, ec) || ec) break;
      fs::remove(*it, ec);
    }
  }
  /// The command succeeded: the folders stay.
  void keep() {
    unregister();
    created_.clear();
  }

 private:
  void unregister() {
    for (const int slot : slots_) unregister_temp_path(slot);
    slots_.clear();
  }
  std::vector<fs::path> created_;
  std::vector<int> slots_;  ///< register_temp_path() handles, deepest folder first
};

/// Makes `dir` (option `flag`) an existing, writable folder, before any long work: creates it and
/// checks that a file can be created in it. @returns the folders it created, which are removed
/// again while empty unless the caller keeps them. @throws std::invalid_argument naming the flag.
CreatedFolders prepare_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw std::invalid_argument(flag + " must not be empty");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::invalid_argument(flag + ": '" + dir + "' exists and is not a folder");
  // Resolved as the kernel resolves it (".." on the disk; one after a missing folder is
  // refused), so that the folders made are exactly those recorded for removal: "a/b/../c" made
  // a/b too, which then kept a/ from being removed (a break test, 2026-12-04).
  fs::path start;
  try {
    start = resolve_output_folder(dir);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
  std::vector<fs::path> missing;  // the folders create_directories() will make, deepest first
  for (fs::path p = start; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  CreatedFolders created({missing.rbegin(), missing.rend()});
  fs::create_directories(start, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::invalid_argument(flag + ": cannot create the folder '" + dir +
                                "': " + (ec ? ec.message() : "not a folder"));
  }
  const fs::path probe = fs::path(dir) / (".dialtree-write-test." + std::to_string(::getpid()));
  std::ofstream(probe.string()) << "";
  const bool ok = fs::exists(probe, ec);
  fs::remove(probe, ec);
  if (!ok) throw std::invalid_argument(flag + ": cannot write into the folder '" + dir + "'");
  return created;
}

struct DialoglueArgs {
  // tasks: its default is add_tasks_option()'s.
  std::string model, tasks, setting = "few", seeds = "1,2,3", out, data_dir, config;
  std::vector<std::string> overrides;
  std::string device;  // --device / DIALTREE_DEVICE: the recipe's device key, given last
  bool from_scratch = false;
  bool save_models = false;
  std::string pseudo_labels;  // --pseudo-labels DIR (self-training)
  CLI::Option* config_option = nullptr;
  bool config_given = false;  // --config was on the command line (even as "")
};

// A file that a command writes when it has finished (--out FILE): checked before the work, so a
// typo does not throw the results away. @throws std::invalid_argument naming the flag.
void check_output_file(const std::string& path, const char* flag) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw std::invalid_argument(std::string(flag) + ": '" + path + "' is a folder, not a file");
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw std::invalid_argument(std::string(flag) + ": the folder '" + parent.string() +
                                "' does not exist");
  }
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const auto& s : split_list(text)) {
    if (s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) {
      throw std::invalid_argument("--seeds: '" + s + "' is not a non-negative integer");
    }
    const std::uint64_t seed = std::stoull(s);
    if (std::find(out.begin(), out.end(), seed) != out.end()) {
      throw std::invalid_argument("--seeds: seed " + s +
                                  " is given twice (each seed is one run, in its own folder)");
    }
    out.push_back(seed);
  }
  if (out.empty()) throw std::invalid_argument("--seeds: no seed given");
  return out;
}

void run_dialoglue_cmd(const DialoglueArgs& a) {
  eval::DialoglueRun run;
  run.model_dir = a.model;
  run.tasks = split_list(a.tasks);  // either spelling: run_dialoglue takes each by data folder
  run.setting = eval::parse_setting(a.setting);
  run.seeds = parse_seeds(a.seeds);
  run.out_dir = a.out;
  run.data_dir = eval::resolve_data_dir(a.data_dir);
  if (a.config_given && a.config.empty()) {
    throw std::invalid_argument("--config: empty path (leave the flag out for the defaults)");
  }
  // --device / DIALTREE_DEVICE (its spelling checked at parse time) sets the recipe's device key
  // before the key=value overrides, so that a device=... typed on the command line wins and is
  // checked like any other value.
  // --from-scratch the same way: both hold for every task, below a task's own override
  // (docs/evaluation.md "Per-task options").
  std::vector<std::string> overrides;
  if (!a.device.empty()) overrides.push_back("device=" + a.device);
  if (a.from_scratch) overrides.emplace_back("from_scratch=true");
  overrides.insert(overrides.end(), a.overrides.begin(), a.overrides.end());
  run.recipe = a.config.empty() ? eval::parse_finetune_recipe("", "defaults", overrides)
                                : eval::load_finetune_recipe(a.config, overrides);
  // Every device is resolved before any data is read; a task's error names its section.
  model::resolve_device(run.recipe.options.device, "device");
  for (auto& [task, o] : run.recipe.task_options) {
    model::resolve_device(o.device, "tasks." + task + ".device");
  }
  // The output folder must be a writable folder: checked before anything is trained.
  CreatedFolders out_folders = prepare_output_dir(a.out, "--out");
  run.save_models = a.save_models;
  run.pseudo_label_dir = a.pseudo_labels;
  const bool tty = ::isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  const json results = eval::run_dialoglue(
      run,
      [&](const eval::RunProgress& p) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double done = static_cast<double>(p.run) +
                            static_cast<double>(p.epoch.epoch) / std::max(1, p.epoch.epochs);
        const double eta = elapsed / done * (static_cast<double>(p.runs) - done);
        const std::string line = fmt::format(
            "[{}/{}] {} seed {}  epoch {}/{}  loss {:.4f}  val {:.2f}  {:.0f} ex/s  ETA {:.0f} s",
            p.run + 1, p.runs, p.task, p.seed, p.epoch.epoch, p.epoch.epochs, p.epoch.train_loss,
            p.epoch.val_accuracy * 100, p.epoch.examples_per_second, eta);
        if (tty) {
          fmt::print(stderr, "\r\x1b[K{}", line);
        } else {
          fmt::print(stderr, "{}\n", line);  // a log file: one line per epoch, as it happens
        }
      },
      [](const std::string& notice) { fmt::print(stderr, "eval dialoglue: {}\n", notice); });
  if (tty) fmt::print(stderr, "\n");
  out_folders.keep();
  fmt::print("{}", eval::results_table(results));
  fmt::print("results: {}/results.json, {}/results.md\n", a.out, a.out);
}

}  // namespace

void register_eval_dialoglue(CLI::App& eval) {
  auto a = std::make_shared<DialoglueArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "dialoglue",
      "Fine-tune a model bundle on DialoGLUE tasks (intent: " +
          join_dialoglue_task_names(TaskSet::Intent) +
          "; tagging: " + join_dialoglue_task_names(TaskSet::Tagging, TaskSpelling::Folder) +
          ") for each seed, select the epoch on val, predict test once, score it against "
          "gt_test.json as DialoGLUE does, and print the table (mean ± std over seeds). Writes "
          "<out>/<task>/seed-<s>/test_predictions.json, <out>/results.json, "
          "<out>/results.md and <out>/submission.json; a folder that holds results of the "
          "same model and recipe is added to (other tasks and seeds are kept).");
  add_model_option(cmd, a->model, ModelFolder::Bundle, kBundleExample);
  add_tasks_option(cmd, a->tasks, TaskSet::FineTune, "");
  cmd->add_option("--setting", a->setting, "full (train.csv) or few (train_10.csv)")
      ->check(CLI::IsMember({"full", "few"}))
      ->capture_default_str();
  cmd->add_option("--seeds", a->seeds, "Comma-separated seeds")->capture_default_str();
  add_out_option(cmd, a->out, OutputKind::Folder,
                 "created, or added to: <task>/seed-<s>/test_predictions.json, results.json, "
                 "results.md, submission.json");
  add_data_dir_option(cmd, a->data_dir, "");
  a->config_option = cmd->add_option(
      "--config", a->config,
      "Fine-tuning hyper-parameters (YAML, e.g. configs/eval-few.yaml; without it, the built-in "
      "defaults of docs/evaluation.md \"Hyper-parameters\", not eval-few.yaml's recipe); keys: " +
          [] {
            std::string k;
            for (const auto& s : eval::finetune_option_keys()) k += (k.empty() ? "" : ", ") + s;
            return k + "; and tasks: {<task>: {<key>: value}} for one task (\"Per-task options\")";
          }());
  cmd->add_flag(
      "--save-models", a->save_models,
      "Save each task's fine-tuned model as a bundle in <out>/<task>/seed-<s>/model (intent "
      "tasks: dialtree serve --model ... answers /classify; tagging tasks, with the tagger and "
      "its tag names: /parse)");
  cmd->add_option("--pseudo-labels", a->pseudo_labels,
                  "Self-training: add DIR/<task>.pseudo.jsonl (from `eval pseudo-label`) to each "
                  "intent task's training split; val and test are unchanged")
      ->check(existing_folder("pseudo-label"));
  cmd->add_flag("--from-scratch", a->from_scratch,
                "Re-initialise every weight (the from-scratch baseline: same architecture and "
                "tokenizer, no pretraining)");
  add_device_option(cmd, a->device, "the recipe's device key; default auto");
  cmd->add_option("overrides", a->overrides,
                  "key=value overrides of the config's keys, for every task; "
                  "tasks.<task>.<key>=value for one (docs/evaluation.md \"Per-task options\")");
  cmd->callback([a] {
    a->config_given = a->config_option->count() > 0;
    run_dialoglue_cmd(*a);
  });
}

namespace {

/// The --tasks list of a command that works on the intent tasks (and, with `tagging`, on the
/// tagging tasks too); `what` completes the message "(<what> for the intent tasks: ...)".
/// @throws std::invalid_argument for an empty list or a task outside those.
std::vector<std::string> intent_tasks(const std::string& list, const std::string& what,
                                      bool tagging = false) {
  std::vector<std::string> tasks = split_list(list);
  if (tasks.empty()) throw std::invalid_argument("--tasks: no task given");
  for (const auto& t : tasks) {
    if (!eval::is_intent_task(t) && !(tagging && eval::is_tagging_task(t))) {
      throw std::invalid_argument(
          "--tasks: unknown task '" + t + "' (" + what +
          " for the intent tasks: " + join_dialoglue_task_names(TaskSet::Intent) +
          (tagging ? "; and the tagging tasks: " + join_dialoglue_task_names(TaskSet::Tagging) + ")"
                   : ")"));
    }
  }
  return tasks;
}

struct ProbeArgs {
  // tasks: its default is add_tasks_option()'s.
  std::string model, tasks, protocols = "dialoglue-few,mteb", split = "test", data_dir, out,
                            dump_dir, pooling = "cls";
  double c = 1.0;
  int max_iter = 100, batch_size = 128, max_utt_len = 64;
  std::string device = "auto";
  bool as_json = false, bf16 = true;
  std::int64_t from_scratch_seed = -1;
};

void run_probe_cmd(const ProbeArgs& a) {
  eval::ProbeOptions o;
  o.protocols.clear();
  for (const auto& p : split_list(a.protocols))
    o.protocols.push_back(eval::parse_probe_protocol(p));
  o.split = a.split;
  o.C = a.c;
  o.max_iter = a.max_iter;
  o.batch_size = a.batch_size;
  o.pooling = eval::parse_probe_pooling(a.pooling);
  o.bf16 = a.bf16;
  o.max_utt_len = a.max_utt_len;
  o.dump_dir = a.dump_dir;
  o.from_scratch_seed = a.from_scratch_seed;
  o.device = a.device;
  // Options, tasks and the data folder are checked before the bundle is loaded.
  eval::check_probe_options(o);
  const std::vector<std::string> tasks = intent_tasks(a.tasks, "the probe is", true);
  const std::string data_dir = eval::resolve_data_dir(a.data_dir);
  check_output_file(a.out, "--out");
  const eval::ProbeReport report = eval::run_probe(a.model, data_dir, tasks, o);
  const json j = report.to_json();
  if (!a.out.empty()) write_file_atomic(a.out, j.dump(2) + "\n");
  if (a.as_json) {
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}", eval::probe_table(report));
    fmt::print("{:.1f} s in all\n", report.seconds);
  }
}

}  // namespace

void register_eval_probe(CLI::App& eval) {
  auto a = std::make_shared<ProbeArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "probe",
      "Representation probe of a model bundle's frozen vectors (docs/evaluation.md, Probe). "
      "Intent tasks: [CLS] vectors, logistic regression (scikit-learn's objective, raw and "
      "standardized vectors) and nearest class centroid, fitted on train_10 (dialoglue-few) or "
      "on 10 draws of 8 examples per label from train (mteb); accuracy, macro F1 and the "
      "effective rank. Tagging tasks (" +
          join_dialoglue_task_names(TaskSet::Tagging) +
          "): the token-level probe, a linear BIO tagger on each word's first sub-word state "
          "(plus TOP's intent on [CLS]) fitted on train_10, slot F1 / exact match by DialoGLUE's "
          "rules. Markdown tables.");
  add_model_option(cmd, a->model, ModelFolder::Bundle, kBundleExample);
  add_tasks_option(cmd, a->tasks, TaskSet::Probe,
                   "intent tasks: the intent probe; tagging tasks: the token-level probe");
  cmd->add_option("--protocols", a->protocols,
                  "Comma-separated protocols of the intent tasks: dialoglue-few, mteb (the tagging "
                  "tasks always fit on train_10)")
      ->capture_default_str();
  cmd->add_option("--split", a->split, "Scored split: test, or val (model selection)")
      ->check(CLI::IsMember({"test", "val"}))
      ->capture_default_str();
  add_data_dir_option(cmd, a->data_dir, "");
  cmd->add_option("--C", a->c, "Logistic regression C (inverse L2 strength; MTEB: 1)")
      ->capture_default_str();
  cmd->add_option("--max-iter", a->max_iter, "L-BFGS iterations (MTEB: 100)")
      ->capture_default_str();
  cmd->add_option("--batch-size", a->batch_size, "Texts per forward pass")->capture_default_str();
  cmd->add_option("--pooling", a->pooling,
                  "Vector of a text: cls (the [CLS] state, as embed/serve/fine-tuning use) or mean "
                  "(mean of the token states: do the tokens carry what [CLS] lacks?)")
      ->check(CLI::IsMember({"cls", "mean"}))
      ->capture_default_str();
  cmd->add_option("--max-utt-len", a->max_utt_len,
                  "Sub-words kept per utterance (its last ones), as intent fine-tuning")
      ->capture_default_str();
  cmd->add_option("--bf16", a->bf16,
                  "Embed under bf16 autocast where the CPU has native bf16 (as intent "
                  "fine-tuning; about 5x faster on AMX); false: fp32")
      ->capture_default_str();
  cmd->add_flag("--json", a->as_json, "Print the report as one JSON object instead of the table");
  add_out_option(cmd, a->out, OutputKind::File,
                 "the report as JSON, in addition to what is printed")
      ->required(false);
  cmd->add_option("--dump-embeddings", a->dump_dir,
                  "Write every embedded split to DIR/<task>/<split>.{json,f32} (float32 rows + a "
                  "JSON header with the labels; bench/reference/probe.py reads them)");
  cmd->add_option("--from-scratch-seed", a->from_scratch_seed,
                  "Re-initialise every weight with this torch seed before embedding: the "
                  "no-pretraining baseline with the bundle's architecture and tokenizer")
      ->check(CLI::NonNegativeNumber);
  add_device_option(cmd, a->device, "");
  cmd->callback([a] { run_probe_cmd(*a); });
}

namespace {

struct PseudoLabelArgs {
  // tasks: its default is add_tasks_option()'s.
  std::string model, tasks, data_dir, out_dir, device = "auto";
  std::vector<std::string> teachers;  ///< "TASK=DIR", as given
  eval::PseudoLabelOptions options;
  bool as_json = false;
};

/// --teacher's "TASK=DIR" pairs by task. @throws std::invalid_argument naming the bad value: no
/// '=', a task not in `tasks`, a task given twice, a DIR that is not a folder.
std::map<std::string, std::string> parse_teachers(const std::vector<std::string>& given,
                                                  const std::vector<std::string>& tasks) {
  std::map<std::string, std::string> out;
  for (const auto& g : given) {
    const auto eq = g.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == g.size()) {
      const std::string example = tasks.empty() ? "TASK" : tasks.front();
      throw std::invalid_argument("--teacher '" + g + "': expected TASK=DIR, e.g. " + example +
                                  "=runs/ft/" + example + "/seed-1/model");
    }
    const std::string task = g.substr(0, eq), dir = g.substr(eq + 1);
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end())
      throw std::invalid_argument("--teacher '" + g + "': " + task + " is not one of --tasks");
    if (!out.emplace(task, dir).second)
      throw std::invalid_argument("--teacher: " + task + " is given twice");
    if (!fs::is_directory(dir))
      throw std::invalid_argument("--teacher '" + g + "': " + dir + " is not a folder");
  }
  return out;
}

void run_pseudo_label_cmd(const PseudoLabelArgs& a) {
  eval::PseudoLabelOptions o = a.options;
  o.device = a.device;
  eval::check_pseudo_label_options(o);
  const std::vector<std::string> tasks = intent_tasks(a.tasks, "pseudo-labels are");
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (std::find(tasks.begin(), tasks.begin() + static_cast<std::ptrdiff_t>(i), tasks[i]) !=
        tasks.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument("--tasks: '" + tasks[i] + "' is given twice");
  }
  const std::map<std::string, std::string> teachers = parse_teachers(a.teachers, tasks);
  const bool probe_needed = teachers.size() < tasks.size();
  if (probe_needed && a.model.empty()) {
    throw std::invalid_argument("--model is required unless every task has a --teacher");
  }
  const torch::Device device = model::resolve_device(o.device, "--device");
  const std::string data_dir = eval::resolve_data_dir(a.data_dir);
  // Every task's files and the output folder are checked before a bundle loads; the files are
  // written once all tasks are labelled, so a failure in a later task writes nothing.
  std::vector<eval::PseudoLabelData> data;
  for (const auto& t : tasks) data.push_back(eval::load_pseudo_label_data(data_dir, t));
  CreatedFolders out_folders = prepare_output_dir(a.out_dir, "--out-dir");
  model::LoadedBundle bundle;
  if (probe_needed) {
    bundle = model::load_bundle(a.model);
    bundle.model->to(device);
  }
  std::vector<eval::PseudoLabelReport> reports;
  for (const auto& d : data) {
    const auto teacher = teachers.find(d.task);
    if (teacher == teachers.end()) {
      reports.push_back(eval::pseudo_label_task(*bundle.model, *bundle.tokenizer, d, o));
      continue;
    }
    model::LoadedBundle fine_tuned = model::load_bundle(teacher->second);
    fine_tuned.model->to(device);
    reports.push_back(eval::pseudo_label_task_head(*fine_tuned.model, *fine_tuned.tokenizer,
                                                   fine_tuned.info.intent_labels, d, o,
                                                   teacher->second));
  }
  std::vector<std::string> written;
  for (auto& r : reports) {
    r.file = (fs::path(a.out_dir) / (r.task + ".pseudo.jsonl")).string();
    sts::write_jsonl(r.file, r.records);
    written.push_back(fs::path(r.file).filename().string());
  }
  const json summary = eval::pseudo_label_summary(a.model, data_dir, o, reports);
  write_file_atomic((fs::path(a.out_dir) / "pseudo_label.json").string(), summary.dump(2) + "\n");
  out_folders.keep();
  for (const auto& e : fs::directory_iterator(a.out_dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 13 && name.compare(name.size() - 13, 13, ".pseudo.jsonl") == 0 &&
        std::find(written.begin(), written.end(), name) == written.end()) {
      fmt::print(stderr, "warning: {} is from an earlier run (not in this run's tasks)\n",
                 e.path().string());
    }
  }
  for (const auto& r : reports) {
    if (!r.converged) {
      fmt::print(stderr,
                 "warning: {}: the logistic regression stopped at --max-iter {} before its "
                 "tolerance; the kept set may change with the vectors' rounding\n",
                 r.task, o.max_iter);
    }
    if (r.pool == 0) fmt::print(stderr, "warning: {}: no unlabelled utterances to label\n", r.task);
  }
  if (a.as_json) {
    fmt::print("{}\n", summary.dump());
    return;
  }
  fmt::print("{}", eval::pseudo_label_table(reports));
}

}  // namespace

void register_eval_pseudo_label(CLI::App& eval) {
  auto a = std::make_shared<PseudoLabelArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "pseudo-label",
      "Pseudo-label the unlabelled training utterances of DialoGLUE's intent tasks for the "
      "semi-supervised intent stage (docs/training.md, Pseudo-labelled intent stage): the "
      "probe's standardized logistic regression, fitted on a bundle's frozen [CLS] vectors of "
      "train_10, labels train.csv's texts (its labels are never used); the most confident "
      "--per-label per predicted intent are written as sts/1 records to DIR/<task>.pseudo.jsonl.");
  add_model_option(cmd, a->model, ModelFolder::Bundle,
                   "whose frozen vectors the probe's classifier labels from, e.g. "
                   "runs/pretrain-lm/final; required unless every task has a --teacher")
      ->required(false);
  cmd->add_option("--teacher", a->teachers,
                  "TASK=DIR: label TASK with the intent head of DIR, a bundle fine-tuned on it "
                  "(`eval dialoglue --save-models`: OUT/TASK/seed-N/model) instead of the probe "
                  "(self-training); repeat per task")
      ->take_all();
  cmd->add_option("--out-dir", a->out_dir,
                  "Folder for <task>.pseudo.jsonl and pseudo_label.json (created)")
      ->required();
  add_tasks_option(cmd, a->tasks, TaskSet::Intent, "");
  add_data_dir_option(cmd, a->data_dir, "");
  cmd->add_option("--per-label", a->options.per_label,
                  "Most confident utterances kept per predicted intent")
      ->capture_default_str();
  cmd->add_option("--C", a->options.C, "Logistic regression C (as the probe)")
      ->capture_default_str();
  cmd->add_option("--max-iter", a->options.max_iter, "L-BFGS iterations (as the probe)")
      ->capture_default_str();
  cmd->add_option("--batch-size", a->options.batch_size, "Texts per forward pass")
      ->capture_default_str();
  cmd->add_option("--max-utt-len", a->options.max_utt_len,
                  "Sub-words kept per utterance (its last ones), as intent fine-tuning")
      ->capture_default_str();
  cmd->add_option("--bf16", a->options.bf16,
                  "Embed under bf16 autocast where the CPU has native bf16; false: fp32")
      ->capture_default_str();
  cmd->add_flag("--json", a->as_json, "Print the summary as one JSON object instead of the table");
  add_device_option(cmd, a->device, "");
  cmd->callback([a] { run_pseudo_label_cmd(*a); });
}

}  // namespace dialtree::cli
