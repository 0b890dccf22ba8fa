// Strict YAML reading of the fine-tuning recipe (eval_config.h): the same scalar, document and
// override rules as the pretraining config (common/strict_yaml.h), from one settings table
// (common/settings.h).
#include "eval/eval_config.h"

#include "common/device_spec.h"
#include "common/error.h"
#include "common/settings_json.h"
#include "common/settings_yaml.h"
#include "common/strict_yaml.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::eval {
namespace {

namespace sy = strict_yaml;

std::string classifier_init_problem(const std::string& value) {
  if (value == "random" || value == "linear_probe") return {};
  return "must be random or linear_probe, got \"" + value + "\"";
}

// The recipe's rows as YAML reads them, bound to `o`; an unknown key's message lists every key
// when none is close.
settings::YamlTable recipe_table(FinetuneOptions& o) {
  return {settings::bind(finetune_settings(), o), "must be a YAML mapping of option keys",
          [](const std::string&) {
            return settings::KeyList{" (a fine-tuning recipe's keys: ",
                                     "; docs/evaluation.md \"Hyper-parameters\")"};
          },
          "key"};
}

}  // namespace

const std::vector<settings::Setting<FinetuneOptions>>& finetune_settings() {
  using O = FinetuneOptions;
  using settings::field;
  static const std::vector<settings::Setting<O>> table = {
      field("num_train_epochs", &O::num_train_epochs, "epochs").in(at_least(1)).alias("epochs"),
      field("per_device_train_batch_size", &O::per_device_train_batch_size, "training batch")
          .in(at_least(1))
          .alias("batch_size"),
      field("per_device_eval_batch_size", &O::per_device_eval_batch_size,
            "val/test batch, sorted by length")
          .in(at_least(1))
          .alias("eval_batch_size"),
      field("learning_rate", &O::learning_rate,
            "AdamW peak learning rate; linear warm-up, then linear decay to 0")
          .in(greater_than(0))
          .alias("lr"),
      field("warmup_ratio", &O::warmup_ratio, "share of steps used for warm-up")
          .in(between(0, 1))
          .alias("warmup_steps"),
      field("weight_decay", &O::weight_decay, "AdamW decoupled decay; none on biases and LayerNorm")
          .in(at_least(0)),
      field("adam_epsilon", &O::adam_epsilon, "AdamW epsilon").in(greater_than(0)),
      field("max_grad_norm", &O::max_grad_norm, "gradient clipping (0 = off)").in(at_least(0)),
      field("dropout", &O::dropout, "replaces every dropout of the bundle (< 0 keeps the bundle's)")
          .in({-sy::kInf, true, 1, false}),
      field("max_utt_len", &O::max_utt_len,
            "sub-words kept per utterance (its last ones); capped by "
            "`max_position_embeddings − 2`")
          .in(at_least(1))
          .alias("max_seq_length"),
      field("bf16", &O::bf16,
            "bf16 autocast, only on CPUs with native bf16 (`avx512_bf16` or AMX); fp32 otherwise")
          .alias("fp16"),
      field("from_scratch", &O::from_scratch,
            "re-initialise every weight: the no-pretraining baseline"),
      field("rdrop_weight", &O::rdrop_weight,
            "R-Drop's symmetric-KL weight (SPACE-2: 5.0); 0 = one pass, CE only")
          .in(at_least(0))
          .alias("r_drop"),
      field("mlm_weight", &O::mlm_weight,
            "auxiliary MLM weight on the same utterances (SPACE-2: 0.1); 0 = off")
          .in(at_least(0)),
      field("mlm_probability", &O::mlm_probability, "share of sub-words that become MLM targets")
          .in({0, false, 1, false}),
      field("early_stopping_patience", &O::early_stopping_patience,
            "stop after this many epochs without a better val score")
          .in(at_least(0, "0 = off"))
          .alias("patience"),
      field("device", &O::device,
            "where fine-tuning runs (docs/gpu.md); `--device` / `DIALTREE_DEVICE` set it from the "
            "command line")
          .checked(&device_spec_problem, "auto, cpu, cuda, cuda:N"),
      field("classifier_init", &O::classifier_init,
            "how the intent classifier starts: HF initialisation, or the logistic regression "
            "fitted on the frozen vectors (section \"Linear-probe initialisation\")")
          .checked(&classifier_init_problem, "random, linear_probe"),
      field("linear_probe_c", &O::linear_probe_c,
            "inverse L2 strength of that fit (scikit-learn's `C`)")
          .in(greater_than(0))};
  return table;
}

std::optional<std::pair<std::string, std::string>> finetune_options_problem(
    const FinetuneOptions& options) {
  if (const auto p = settings::first_problem(settings::view(finetune_settings(), options))) {
    return std::make_pair(p->name, p->message);
  }
  return std::nullopt;
}

nlohmann::json finetune_options_json(const FinetuneOptions& o) {
  nlohmann::json out = nlohmann::json::object();
  settings::write_json(settings::view(finetune_settings(), o), out);
  return out;
}

std::vector<std::string> finetune_option_keys() {
  std::vector<std::string> names;
  for (const auto& f : finetune_settings()) names.push_back(f.info.name);
  return names;
}

const FinetuneOptions& FinetuneRecipe::for_task(const std::string& task) const {
  const auto it = task_options.find(readers::dialoglue_task_folder(task));
  return it == task_options.end() ? options : it->second;
}

namespace {

constexpr char kTasksKey[] = "tasks";

/// The data folder name of a task section's key, or a DataError at `at` listing the tasks.
std::string section_task(const sy::Origin& at, const std::string& name) {
  const readers::DialoglueTaskInfo* row = readers::find_dialoglue_task(name);
  if (row == nullptr || !readers::in_task_set(*row, readers::TaskSet::FineTune)) {
    sy::fail(at, std::string(kTasksKey) + "." + escape_for_message(name, 64),
             "unknown task " + quote_for_message(name, 64) + "; a section names one of " +
                 readers::join_dialoglue_task_names(readers::TaskSet::FineTune,
                                                    readers::TaskSpelling::NameAndFolder));
  }
  return std::string(row->folder);
}

/// One task's section as read: its keys (a mapping node) and where they came from, in order.
struct TaskSection {
  sy::Source source;
  YAML::Node keys;
};

/// Reads the sections of `task` into `o` (bound by `table`), naming the key as
/// `tasks.<task>.<key>` in an error.
void read_sections(const settings::YamlTable& table, const std::string& task,
                   const std::vector<TaskSection>& sections, settings::Origins& origins) {
  for (const TaskSection& section : sections) {
    try {
      settings::read_document(table, section.source, section.keys, origins);
    } catch (const DataError& e) {
      throw DataError(e.file(), e.where(), std::string(kTasksKey) + "." + task + "." + e.field(),
                      e.detail());
    }
  }
}

/// Task sections by data folder name, each task's in the order read.
using SectionsByTask = std::map<std::string, std::vector<TaskSection>>;

/// Adds the sections of `map` (a `tasks:` mapping read from `from`, the key at `at`) to `into`.
/// @throws DataError at the line: not a mapping, a task name that is not plain or unknown, a task
///   named twice, a section that is not a mapping.
void add_sections(SectionsByTask& into, const sy::Source& from, const sy::Origin& at,
                  const YAML::Node& map) {
  if (map.IsNull()) return;  // `tasks:` left empty
  if (!map.IsMap()) {
    sy::fail(at, kTasksKey,
             "expected a mapping of task names to option keys, found " + sy::describe(map));
  }
  std::map<std::string, std::string> seen;  // folder -> the spelling that named it
  for (const auto& kv : map) {
    const sy::Origin key_at = from.at(kv.first);
    if (!kv.first.IsScalar()) {
      sy::fail(key_at, kTasksKey, "task names must be plain names, found " +
                                      sy::describe(kv.first));
    }
    const std::string task = section_task(key_at, kv.first.Scalar());
    if (const auto [it, fresh] = seen.emplace(task, kv.first.Scalar()); !fresh) {
      sy::fail(key_at, std::string(kTasksKey) + "." + kv.first.Scalar(),
               it->second == kv.first.Scalar()
                   ? "duplicate key '" + it->second + "'"
                   : "task '" + task + "' has two sections ('" + it->second + "' and '" +
                         kv.first.Scalar() + "')");
    }
    if (!kv.second.IsNull() && !kv.second.IsMap()) {
      sy::fail(key_at, std::string(kTasksKey) + "." + kv.first.Scalar(),
               "expected a mapping of option keys, found " + sy::describe(kv.second));
    }
    into[task].push_back({from, kv.second});
  }
}

/// Adds a command-line task override (tasks={task: {key: value}}, tasks.<task>={key: value} or
/// tasks.<task>.<key>=value) to `into`. @throws DataError naming the override, as add_sections.
void add_task_override(SectionsByTask& into, const std::string& text) {
  const std::string prefix = std::string(kTasksKey) + ".";
  const sy::Source from{sy::kCommandLine, text};
  const sy::Origin at = sy::override_origin(text);
  const auto [key, value] = sy::split_override(text, "tasks.<task>.<key>");
  if (key == kTasksKey) {
    add_sections(into, from, at, value);
    return;
  }
  const std::string rest = key.substr(prefix.size());
  const auto dot = rest.find('.');
  const std::string task = section_task(at, rest.substr(0, dot));
  if (dot == std::string::npos) {
    if (!value.IsNull() && !value.IsMap()) {
      sy::fail(at, key, "expected a mapping of option keys, found " + sy::describe(value));
    }
    into[task].push_back({from, value});
  } else {
    YAML::Node one(YAML::NodeType::Map);
    one[rest.substr(dot + 1)] = value;
    into[task].push_back({from, one});
  }
}

}  // namespace

FinetuneRecipe parse_finetune_recipe(const std::string& yaml_text, const std::string& source,
                                     const std::vector<std::string>& overrides) {
  // Precedence, low to high: the file's keys, the file's section of the task, the command
  // line's key=value, the command line's tasks.<task>.<key>=value.
  FinetuneOptions file_options;
  settings::Origins file_origins;
  SectionsByTask file_sections, line_sections;
  std::vector<std::string> line_common;
  if (auto doc = sy::load_document(yaml_text, source)) {
    // The `tasks:` section is taken out before the common keys are read (it is not one of them).
    if (doc->IsMap()) {
      int found = 0;
      for (const auto& kv : *doc) {
        if (kv.first.IsScalar() && kv.first.Scalar() == kTasksKey) {
          if (++found > 1) {
            sy::fail(sy::Source{source, ""}.at(kv.first), kTasksKey, "duplicate key 'tasks'");
          }
          add_sections(file_sections, sy::Source{source, ""}, sy::Source{source, ""}.at(kv.first),
                       kv.second);
        }
      }
      if (found > 0) doc->remove(kTasksKey);
    }
    settings::read_document(recipe_table(file_options), sy::Source{source, ""}, *doc,
                            file_origins);
  }
  sy::check_utf8(yaml_text, source);  // comments and keys (values were checked above)
  for (const auto& text : overrides) {
    const std::string tasks(kTasksKey);
    if (text.rfind(tasks + ".", 0) == 0 || text.rfind(tasks + "=", 0) == 0) {
      add_task_override(line_sections, text);
    } else {
      line_common.push_back(text);
    }
  }
  // The options of every task, and of each task with a section.
  const auto options_of = [&](const std::string& task) {
    FinetuneOptions o = file_options;
    settings::Origins origins = file_origins;
    const settings::YamlTable table = recipe_table(o);
    if (const auto it = file_sections.find(task); it != file_sections.end()) {
      read_sections(table, task, it->second, origins);
    }
    for (const auto& text : line_common) settings::apply_override(table, text, origins);
    if (const auto it = line_sections.find(task); it != line_sections.end()) {
      read_sections(table, task, it->second, origins);
    }
    if (const auto p = settings::first_problem(table.rows)) {
      const std::string key =
          task.empty() ? p->name : std::string(kTasksKey) + "." + task + "." + p->name;
      const auto it = origins.find(p->name);
      if (it != origins.end()) sy::fail(it->second, key, p->message);
      sy::fail(sy::Origin{source, ""}, key, p->message + " (the default value)");
    }
    return o;
  };
  FinetuneRecipe recipe;
  recipe.options = options_of("");
  for (const auto* sections : {&file_sections, &line_sections}) {
    for (const auto& [task, list] : *sections) {
      if (recipe.task_options.count(task) == 0) recipe.task_options[task] = options_of(task);
    }
  }
  return recipe;
}

FinetuneRecipe load_finetune_recipe(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  return parse_finetune_recipe(sy::read_file(path), path, overrides);
}

nlohmann::json task_options_json(const FinetuneRecipe& recipe) {
  const nlohmann::json common = finetune_options_json(recipe.options);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [task, o] : recipe.task_options) {
    nlohmann::json differs = nlohmann::json::object();
    const nlohmann::json mine = finetune_options_json(o);
    for (const auto& [key, value] : mine.items()) {
      if (common.at(key) != value) differs[key] = value;
    }
    if (!differs.empty()) out[task] = std::move(differs);
  }
  return out;
}

FinetuneOptions parse_finetune_options(const std::string& yaml_text, const std::string& source,
                                       const std::vector<std::string>& overrides) {
  FinetuneRecipe recipe = parse_finetune_recipe(yaml_text, source, overrides);
  if (!recipe.task_options.empty()) {
    throw DataError(source, "", kTasksKey,
                    "per-task sections are read by `eval dialoglue` only; this command fine-tunes "
                    "with one set of options");
  }
  return std::move(recipe.options);
}

FinetuneOptions load_finetune_options(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  return parse_finetune_options(sy::read_file(path), path, overrides);
}

}  // namespace dialtree::eval
