// Strict YAML reading, overrides, validation and dumping of the pretraining config (config.h).
#include "trainer/config.h"

#include <sched.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>
#include <variant>

#include "common/device_spec.h"
#include "common/error.h"
#include "common/join.h"
#include "common/settings_yaml.h"
#include "common/strict_yaml.h"
#include "common/text_distance.h"
#include "common/value_range.h"
#include "readers/dialoglue_tasks.h"
#include "sts/views.h"

namespace dialtree::trainer {
namespace {

namespace fs = std::filesystem;

using strict_yaml::fail;
using strict_yaml::kCommandLine;
using strict_yaml::kMaxSize;
using strict_yaml::Origin;
using strict_yaml::trim;
using Origins = settings::Origins;
using settings::Target;

// The config's rows as YAML reads them, bound to `config`; an unknown key's message lists the
// keys of its section when none is close.
settings::YamlTable config_table(PretrainConfig& config) {
  return {
      settings::bind(pretrain_settings(), config), "the config must be a mapping of keys to values",
      [](const std::string& section) {
        return settings::KeyList{section.empty() ? std::string("; valid keys at the top level: ")
                                                 : "; valid keys in '" + section + ":': ",
                                 ""};
      },
      "key.sub"};
}

// ---------------------------------------------------------------------------------------------
// Validation.

using strict_yaml::format_real;

class Validator {
 public:
  Validator(const PretrainConfig& config, const Origins& origins, std::string file)
      : c_(config), origins_(origins), file_(std::move(file)) {}

  // Fails at `key`'s origin; a key left at its default is reported against the config file.
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const {
    const auto it = origins_.find(key);
    if (it != origins_.end()) fail(it->second, key, message);
    fail(Origin{file_, ""}, key, message + " (not set, so its default applies)");
  }

  // A required string key that is absent or empty.
  void required(const std::string& key, const std::string& value, const std::string& what) const {
    if (!value.empty()) return;
    const auto it = origins_.find(key);
    fail(it != origins_.end() ? it->second : Origin{file_, ""}, key, "is required: " + what);
  }

  // Of two keys in a cross-field rule, the one the user set last: an override on the command
  // line before a line of the file, a set key before a default (the second if both or neither).
  std::string blame(const std::string& a, const std::string& b) const {
    const auto overridden = [&](const std::string& key) {
      const auto it = origins_.find(key);
      return it != origins_.end() && it->second.file == kCommandLine;
    };
    if (overridden(a) != overridden(b)) return overridden(a) ? a : b;
    return origins_.count(b) != 0 || origins_.count(a) == 0 ? b : a;
  }

  void integer(const std::string& key, long long v, long long lo, long long hi,
               const std::string& note = {}) const {
    const std::string problem = integer_range_problem(v, lo, hi, note);
    if (!problem.empty()) fail_at(key, problem);
  }

  // The ranges of the rows of `section` (pretrain_settings()), in table order.
  void ranges(const std::string& section) const {
    if (const auto p = settings::first_problem(settings::view(pretrain_settings(), c_), section)) {
      fail_at(p->name, p->message);
    }
  }

  void one_of(const std::string& key, const std::string& v,
              const std::vector<std::string>& allowed) const {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "'" : ", '") + a + "'";
    fail_at(key, "must be one of " + list + ", got '" + v + "'");
  }

  void paths(const std::string& key, const std::vector<std::string>& list) const {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].empty()) fail_at(key, "entry " + std::to_string(i) + " is an empty path");
      if (!seen.insert(list[i]).second) fail_at(key, "'" + list[i] + "' is listed twice");
    }
  }

  void run() const;

 private:
  void top_level() const;
  void model_section() const;
  void data_section() const;
  void cross_section() const;
  void loss_section() const;

  const PretrainConfig& c_;
  const Origins& origins_;
  std::string file_;
};

// Top-level keys.
void Validator::top_level() const {
  required("output_dir", c_.output_dir, "the run directory");
  ranges("");
  one_of("lr_scheduler_type", c_.lr_scheduler_type, {"linear"});
  const std::vector<std::string> probe_tasks =
      readers::dialoglue_task_names(readers::TaskSet::Probe);
  for (const auto& t : c_.eval_tasks) one_of("eval_tasks", t, probe_tasks);
  if (c_.eval_steps > 0 && c_.eval_tasks.empty()) {
    fail_at(blame("eval_steps", "eval_tasks"), "eval_steps > 0 needs at least one eval task");
  }
  if (c_.load_best_model_at_end && (c_.eval_steps == 0 || c_.metric_for_best_model.empty())) {
    fail_at(blame("load_best_model_at_end", "metric_for_best_model"),
            "load_best_model_at_end needs eval_steps > 0 and a metric_for_best_model (e.g. "
            "eval_probe_mean_accuracy)");
  }
  const int cpus = available_cpus();
  integer("threads", c_.threads, 1, cpus,
          "this process may use " + std::to_string(cpus) + " CPU" + (cpus == 1 ? "" : "s"));
  if (const std::string p = device_spec_problem(c_.device); !p.empty()) fail_at("device", p);
  one_of("ddp_backend", c_.ddp_backend, {"gloo"});
}

// `model:`: the encoder schema's own rules (model/config.h).
void Validator::model_section() const {
  const auto& m = c_.model;
  if (const auto problem = m.first_problem("model.", /*vocab_from_tokenizer=*/true)) {
    const auto& k = problem->keys;
    fail_at(k.size() == 2 ? blame(k[0], k[1]) : k.front(), problem->message);
  }
}

// `data:`.
void Validator::data_section() const {
  const auto& d = c_.data;
  required("data.tokenizer", d.tokenizer, "the tokenizer directory");
  paths("data.labelled", d.labelled);
  paths("data.unlabelled", d.unlabelled);
  if (d.labelled.empty() && d.unlabelled.empty()) {
    fail_at(blame("data.labelled", "data.unlabelled"),
            "data.labelled and data.unlabelled are both empty; give at least one input file");
  }
  ranges("data");
  if (d.max_utt_len + 2 > d.max_len) {
    fail_at(blame("data.max_len", "data.max_utt_len"),
            "data.max_utt_len (" + std::to_string(d.max_utt_len) +
                ") plus its two role markers must fit in data.max_len (" +
                std::to_string(d.max_len) + ")");
  }
  one_of("data.trigger_role", d.trigger_role, {"user", "system", "user_system"});
  if (d.contrastive_shard_size != 0) {
    integer("data.contrastive_shard_size", d.contrastive_shard_size, 2, kMaxSize,
            "or 0 = the whole batch");
    const std::pair<const char*, int> batches[] = {
        {"per_device_train_batch_size", d.labelled.empty() ? 0 : c_.per_device_train_batch_size},
        {"unlabelled_batch_size", d.unlabelled.empty() ? 0 : c_.unlabelled_batch_size}};
    for (const auto& [key, size] : batches) {
      if (size != 0 && size % d.contrastive_shard_size != 0) {
        fail_at(blame(key, "data.contrastive_shard_size"),
                "data.contrastive_shard_size (" + std::to_string(d.contrastive_shard_size) +
                    ") must divide " + key + " (" + std::to_string(size) +
                    "); use 0 for the whole batch");
      }
    }
  }
  if (!d.group_by_view.empty()) {
    if (!sts::find_view(d.group_by_view)) {
      fail_at("data.group_by_view", "must be \"\" (random batches) or one of the views " +
                                        join(sts::view_name_list()) + ", got '" +
                                        d.group_by_view + "'");
    }
    if (d.labelled.empty()) {
      fail_at(blame("data.labelled", "data.group_by_view"),
              "data.group_by_view groups labelled batches, but data.labelled is empty");
    }
    const bool sharded = d.contrastive_shard_size != 0;
    const int unit = sharded ? d.contrastive_shard_size : c_.per_device_train_batch_size;
    const char* unit_key = sharded ? "data.contrastive_shard_size" : "per_device_train_batch_size";
    if (unit % d.group_size != 0) {
      fail_at(blame(unit_key, "data.group_size"),
              "data.group_size (" + std::to_string(d.group_size) + ") must divide " + unit_key +
                  " (" + std::to_string(unit) + "), so that no group is split between " +
                  (sharded ? "shards" : "batches"));
    }
  }
}

// Cross-section: tables large enough for the serialised ids (docs/method.md §1.2, §1.5).
void Validator::cross_section() const {
  const auto& m = c_.model;
  const auto& d = c_.data;
  if (m.max_position_embeddings < d.max_utt_len + 2) {
    fail_at(blame("data.max_utt_len", "model.max_position_embeddings"),
            "model.max_position_embeddings (" + std::to_string(m.max_position_embeddings) +
                ") must be at least data.max_utt_len + 2 (" + std::to_string(d.max_utt_len + 2) +
                "): positions restart in every marker-wrapped utterance");
  }
  if (m.max_turns < d.max_ctx_turn) {
    fail_at(blame("data.max_ctx_turn", "model.max_turns"),
            "model.max_turns (" + std::to_string(m.max_turns) +
                ") must be at least data.max_ctx_turn (" + std::to_string(d.max_ctx_turn) +
                "): every kept utterance needs a turn id");
  }
}

// `loss:`.
void Validator::loss_section() const {
  const auto& d = c_.data;
  const auto& l = c_.loss;
  ranges("loss");
  one_of("loss.score_mode", l.score_mode, {"per_view", "combined"});
  one_of("loss.language_objective", l.language_objective, {"mlm", "rtd"});
  if (l.language_objective == "rtd" && !(l.mlm_weight > 0)) {
    fail_at(blame("loss.language_objective", "loss.mlm_weight"),
            "loss.language_objective rtd needs loss.mlm_weight > 0 (it weighs the language "
            "term, which rtd replaces)");
  }
  if (l.language_objective != "rtd" && l.encoder_mlm_weight != 0) {
    fail_at(blame("loss.encoder_mlm_weight", "loss.language_objective"),
            "loss.encoder_mlm_weight applies to loss.language_objective rtd only (with mlm the "
            "encoder's MLM loss is the language term, weighed by loss.mlm_weight)");
  }
  if (l.token_contrastive_weight > 0 && d.labelled.empty()) {
    fail_at(blame("loss.token_contrastive_weight", "data.labelled"),
            "loss.token_contrastive_weight > 0 needs labelled data (data.labelled is empty): "
            "the term reads the value mentions of label trees");
  }
  if (l.gather_across_devices && d.contrastive_shard_size != 0) {
    fail_at(blame("loss.gather_across_devices", "data.contrastive_shard_size"),
            "loss.gather_across_devices needs data.contrastive_shard_size 0 (the gathered "
            "candidate set is not cut into shards); got " +
                std::to_string(d.contrastive_shard_size));
  }
  const bool any_term =
      l.mlm_weight > 0 ||
      (!d.labelled.empty() && (l.contrastive_weight > 0 || l.token_contrastive_weight > 0)) ||
      (!d.unlabelled.empty() && l.self_supervised_weight > 0);
  if (!any_term) {
    fail_at("loss.mlm_weight", "every loss term has weight 0 for the given inputs");
  }
}

// Top level, model:, data:, the rules that span model: and data:, loss:; the first broken rule
// fails.
void Validator::run() const {
  top_level();
  model_section();
  data_section();
  cross_section();
  loss_section();
}

// ---------------------------------------------------------------------------------------------
// Dumping.

// True when a string written plainly would read back as something else (null, bool, number).
bool looks_typed(const std::string& s) {
  if (s.empty() || s != trim(s)) return true;
  static const std::set<std::string> words = {"null", "~",     "true",  "false", "yes",
                                              "no",   "on",    "off",   "y",     "n",
                                              ".inf", "-.inf", "+.inf", ".nan"};
  if (words.count(ascii_lower(s)) != 0) return true;
  // Anything number-like (YAML 1.1 also reads 0x1f, 0o17, 1_000, 1:30 as numbers).
  const std::size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  return i < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[i])) ||
          (s[i] == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))));
}

void emit(YAML::Emitter& out, const Target& target) {
  std::visit(
      [&](auto* value) {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
          throw std::logic_error("trainer config: an optional key");
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          out << std::to_string(*value);
        } else if constexpr (std::is_same_v<T, double>) {
          out << format_real(*value);
        } else if constexpr (std::is_same_v<T, bool>) {
          out << (*value ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (looks_typed(*value)) out << YAML::DoubleQuoted;
          out << *value;
        } else {
          // Short names (projection views) and empty lists on one line, paths one per line.
          const bool flow = std::all_of(value->begin(), value->end(),
                                        [](const auto& s) { return s.size() <= 4; });
          if (flow) out << YAML::Flow;
          out << YAML::BeginSeq;
          for (const auto& s : *value) {
            if (looks_typed(s)) out << YAML::DoubleQuoted;
            out << s;
          }
          out << YAML::EndSeq;
        }
      },
      target);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {

using PretrainRows = std::vector<settings::Setting<PretrainConfig>>;

// Top-level keys, output_dir .. data_seed: the run folder, the schedule and the optimiser.
PretrainRows optimiser_setting_rows() {
  using C = PretrainConfig;
  using settings::field;
  return {
      field("output_dir", &C::output_dir, "run directory (required)"),
      field("max_steps", &C::max_steps, "total optimisation steps; > 0 overrides num_train_epochs")
          .in(at_least(0, "0 = train for num_train_epochs")),
      field("num_train_epochs", &C::num_train_epochs,
            "epochs, each max(#labelled, #unlabelled batches) steps")
          .in(between(1, 1000000)),
      field("per_device_train_batch_size", &C::per_device_train_batch_size,
            "labelled examples per step")
          .in(between(1, kMaxSize)),
      field("unlabelled_batch_size", &C::unlabelled_batch_size, "unlabelled examples per step")
          .in(between(1, kMaxSize)),
      field("learning_rate", &C::learning_rate, "peak AdamW learning rate")
          .in(greater_than(0))
          .alias("lr"),
      field("weight_decay", &C::weight_decay, "AdamW decoupled weight decay").in(at_least(0)),
      field("adam_beta1", &C::adam_beta1, "AdamW beta1").in(Range{0, true, 1, false}),
      field("adam_beta2", &C::adam_beta2, "AdamW beta2").in(Range{0, true, 1, false}),
      field("adam_epsilon", &C::adam_epsilon, "AdamW epsilon").in(greater_than(0)),
      field("warmup_ratio", &C::warmup_ratio, "share of the steps in linear warm-up")
          .in(between(0, 1))
          .alias("warmup_steps"),
      field("lr_scheduler_type", &C::lr_scheduler_type,
            "learning-rate schedule: warm-up, then linear decay to 0")
          .allows("linear"),
      field("max_grad_norm", &C::max_grad_norm, "gradient-norm clipping (0 = off)").in(at_least(0)),
      field("gradient_accumulation_steps", &C::gradient_accumulation_steps,
            "micro-batches per optimiser step")
          .in(between(1, kMaxSize)),
      field("seed", &C::seed, "seed of initialisation, dropout and masking").in(at_least(0)),
      field("data_seed", &C::data_seed, "seed of the batch order (absent: seed)")
          .in(at_least(0))
          .alias("dataloader_seed"),
  };
}

// Top-level keys, logging_steps .. threads: logging, checkpoints, evaluation and the machine.
PretrainRows run_setting_rows() {
  using C = PretrainConfig;
  using settings::field;
  return {
      field("logging_steps", &C::logging_steps, "a metrics.jsonl line every this many steps")
          .in(at_least(1)),
      field("save_steps", &C::save_steps, "a checkpoint every this many steps")
          .in(at_least(0, "0 = save only the final model")),
      field("save_total_limit", &C::save_total_limit, "checkpoints kept, oldest pruned first")
          .in(at_least(0, "0 = keep every checkpoint")),
      field("eval_steps", &C::eval_steps, "run the probe every this many steps and at the end")
          .in(at_least(0, "0 = no evaluation during pretraining")),
      field("eval_tasks", &C::eval_tasks, "DialoGLUE tasks the probe scores").allows("probe tasks"),
      field("eval_data_dir", &C::eval_data_dir,
            "DialoGLUE data folder (empty: $DIALTREE_DATA, else ../shared/data/dialoglue)"),
      field("metric_for_best_model", &C::metric_for_best_model,
            "metrics.jsonl key that decides the best model (\"eval_\" added when missing)"),
      field("greater_is_better", &C::greater_is_better,
            "whether a larger metric_for_best_model is better"),
      field("load_best_model_at_end", &C::load_best_model_at_end,
            "keep the best evaluation's weights as best/ and final/"),
      field("model_name_or_path", &C::model_name_or_path,
            "model bundle whose weights the run starts from (empty: random initialisation)")
          .nullable(),
      field("overwrite_output_dir", &C::overwrite_output_dir,
            "let a fresh run replace a finished run's final/"),
      field("resume_from_checkpoint", &C::resume_from_checkpoint,
            "checkpoint to resume from; \"latest\" = output_dir's newest; empty = fresh start")
          .nullable(),
      field("bf16", &C::bf16, "bf16 autocast for matrix products; weights stay fp32").alias("fp16"),
      field("device", &C::device, "where the model trains (docs/gpu.md)")
          .allows("auto, cpu, cuda, cuda:N"),
      field("padding_free", &C::padding_free,
            "compute only the real tokens of each batch (docs/performance.md)"),
      field("threads", &C::threads, "intra-op threads")
          .allows("in [1, CPUs]")
          .default_shown("every available CPU")
          .alias("num_threads"),
  };
}

// Top-level keys, ddp_*: data-parallel runs (docs/training.md "Data parallelism").
PretrainRows ddp_setting_rows() {
  using C = PretrainConfig;
  using settings::field;
  return {
      field("ddp_backend", &C::ddp_backend, "data-parallel backend").allows("gloo"),
      field("ddp_timeout", &C::ddp_timeout,
            "seconds the rendezvous and every collective may wait for the other ranks")
          .in(at_least(1, "seconds")),
      field("ddp_bucket_cap_mb", &C::ddp_bucket_cap_mb, "MiB per gradient all-reduce bucket")
          .in(between(1, 1 << 16)),
      field("ddp_health_checks", &C::ddp_health_checks,
            "per-rank step timing, straggler reports and the hang watchdog"),
      field("ddp_straggler_ratio", &C::ddp_straggler_ratio,
            "a rank this many times slower than its peers' median is an outlier")
          .in(greater_than(1)),
      field("ddp_straggler_windows", &C::ddp_straggler_windows,
            "consecutive outlier logging windows before a report")
          .in(between(1, 1000000)),
      field("ddp_hang_timeout_factor", &C::ddp_hang_timeout_factor,
            "hang timeout as a multiple of the median step seconds")
          .in(greater_than(1)),
      field("ddp_hang_timeout_min", &C::ddp_hang_timeout_min,
            "lower bound of the hang timeout, seconds")
          .in(greater_than(0)),
  };
}

// `model:`: the encoder's own rows (model/config.h), the keys a training YAML sets, in the order
// print-config writes them.
PretrainRows model_setting_rows() {
  return settings::nest(
      "model.", &PretrainConfig::model, model::encoder_settings(),
      {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
       "hidden_dropout_prob", "attention_probs_dropout_prob", "embedding_dropout_prob",
       "ffn_dropout_prob", "max_position_embeddings", "layer_norm_eps", "type_vocab_size",
       "initializer_range", "max_turns", "projection_views", "projection_dim"});
}

// `data:`: the files and how examples are cut from them.
PretrainRows data_setting_rows() {
  using C = PretrainConfig;
  using settings::field;
  using D = DataConfig;
  return {
      field("data.tokenizer", &C::data, &D::tokenizer,
            "tokenizer directory (SentencePiece or WordPiece; required)"),
      field("data.labelled", &C::data, &D::labelled, "labelled sts/1 JSONL files"),
      field("data.unlabelled", &C::data, &D::unlabelled,
            "unlabelled sts/1 JSONL or plain-text files"),
      field("data.max_len", &C::data, &D::max_len, "sequence length after left truncation")
          .in(between(3, kMaxSize, "at least one sub-word and two role markers")),
      field("data.max_utt_len", &C::data, &D::max_utt_len,
            "sub-words kept per utterance (its last ones)")
          .in(between(1, kMaxSize)),
      field("data.max_ctx_turn", &C::data, &D::max_ctx_turn,
            "utterances kept per example, the current one included")
          .in(between(1, kMaxSize)),
      field("data.trigger_role", &C::data, &D::trigger_role, "roles whose turns become examples")
          .allows("user, system, user_system"),
      field("data.contrastive_shard_size", &C::data, &D::contrastive_shard_size,
            "examples per contrastive-loss shard (0 = the whole batch)")
          .allows("0, or >= 2 dividing both batch sizes"),
      field("data.group_by_view", &C::data, &D::group_by_view,
            "labelled batches drawn so that groups share an element of this view (\"\" = off)")
          .nullable()
          .allows("\"\", " + join(sts::view_name_list())),
      field("data.group_size", &C::data, &D::group_size,
            "examples per group with data.group_by_view (dividing the contrastive shard)")
          .in(between(2, kMaxSize, "grouping is switched off by data.group_by_view \"\"")),
  };
}

// `loss:`: the contrastive and language terms.
PretrainRows loss_setting_rows() {
  using C = PretrainConfig;
  using settings::field;
  using L = LossConfig;
  return {
      field("loss.temperature", &C::loss, &L::temperature, "contrastive temperature")
          .in(greater_than(0))
          .alias("tau"),
      field("loss.base_temperature", &C::loss, &L::base_temperature,
            "base temperature; the loss is scaled by temperature / base_temperature")
          .in(greater_than(0)),
      field("loss.contrastive_weight", &C::loss, &L::contrastive_weight,
            "weight of the soft-mask contrastive loss on labelled batches")
          .in(at_least(0)),
      field("loss.self_supervised_weight", &C::loss, &L::self_supervised_weight,
            "weight of the self-supervised contrastive loss on unlabelled batches")
          .in(at_least(0)),
      field("loss.mlm_weight", &C::loss, &L::mlm_weight,
            "weight of the language term (MLM or RTD) on both streams")
          .in(at_least(0))
          .alias("mlm_ratio"),
      field("loss.mlm_probability", &C::loss, &L::mlm_probability,
            "probability that a sub-word is chosen for masking")
          .in(Range{0, false, 1, false}),
      field("loss.whole_word_mask", &C::loss, &L::whole_word_mask,
            "mask whole words: the probability chooses words, all their sub-words are targets"),
      field("loss.score_mode", &C::loss, &L::score_mode,
            "one contrastive loss per view, or one with the views' scores averaged")
          .allows("per_view, combined"),
      field("loss.gather_across_devices", &C::loss, &L::gather_across_devices,
            "data-parallel: contrast against every rank's batch"),
      field("loss.language_objective", &C::loss, &L::language_objective,
            "the language term: masked LM or replaced-token detection")
          .allows("mlm, rtd"),
      field("loss.generator_size", &C::loss, &L::generator_size,
            "rtd: the generator's depth as a share of model.num_hidden_layers")
          .in(Range{0, false, 1, true}),
      field("loss.discriminator_weight", &C::loss, &L::discriminator_weight,
            "rtd: weight of the discriminator's loss beside the generator's")
          .in(at_least(0)),
      field("loss.encoder_mlm_weight", &C::loss, &L::encoder_mlm_weight,
            "rtd: weight of the encoder's own MLM loss on the corrupted input (0: ELECTRA's)")
          .in(at_least(0)),
      field("loss.token_contrastive_weight", &C::loss, &L::token_contrastive_weight,
            "weight of the token-level tree term: value-mention tokens of one slot as positives")
          .in(at_least(0)),
  };
}

}  // namespace

const std::vector<settings::Setting<PretrainConfig>>& pretrain_settings() {
  static const PretrainRows table = [] {
    PretrainRows all;
    for (PretrainRows (*part)() : {optimiser_setting_rows, run_setting_rows, ddp_setting_rows,
                                   model_setting_rows, data_setting_rows, loss_setting_rows}) {
      PretrainRows rows = part();
      all.insert(all.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
    }
    return all;
  }();
  return table;
}

model::EncoderConfig pretraining_model_defaults() {
  model::EncoderConfig m;
  m.vocab_size = 0;
  m.hidden_dropout_prob = 0.2;
  m.attention_probs_dropout_prob = 0.2;
  m.embedding_dropout_prob = 0.2;
  m.ffn_dropout_prob = 0.2;
  return m;
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool operator==(const PretrainConfig& a, const PretrainConfig& b) {
  return settings::same_values(settings::view(pretrain_settings(), a),
                               settings::view(pretrain_settings(), b));
}

PretrainConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                            const std::vector<std::string>& overrides) {
  const std::optional<YAML::Node> doc = strict_yaml::load_document(yaml_text, source_name);
  PretrainConfig config;
  Origins origins;
  const settings::YamlTable table = config_table(config);
  if (doc) settings::read_document(table, strict_yaml::Source{source_name, ""}, *doc, origins);
  strict_yaml::check_utf8(yaml_text, source_name);  // comments and keys (values checked above)
  for (const auto& o : overrides) settings::apply_override(table, o, origins);
  if (origins.count("data_seed") == 0) config.data_seed = config.seed;
  if (origins.count("threads") == 0) config.threads = available_cpus();
  // HF's convention: a metric name without the "eval_" prefix gets it.
  if (!config.metric_for_best_model.empty() && config.metric_for_best_model.rfind("eval_", 0) != 0)
    config.metric_for_best_model = "eval_" + config.metric_for_best_model;
  if (origins.count("model.embedding_dropout_prob") == 0) {
    config.model.embedding_dropout_prob = config.model.hidden_dropout_prob;
  }
  if (origins.count("model.ffn_dropout_prob") == 0) {
    config.model.ffn_dropout_prob = config.model.hidden_dropout_prob;
  }
  Validator(config, origins, source_name).run();
  return config;
}

PretrainConfig load_config(const std::string& yaml_path,
                           const std::vector<std::string>& overrides) {
  return parse_config(strict_yaml::read_file(yaml_path), yaml_path, overrides);
}

std::string dump_config(const PretrainConfig& config) {
  YAML::Emitter out;
  out << YAML::Comment("dialtree pretraining config, resolved: every key with its effective value")
      << YAML::Newline;
  out << YAML::BeginMap;
  std::string open_section;
  for (const settings::Bound& b : settings::view(pretrain_settings(), config)) {
    const std::string section = settings::section_of(b.info->name);
    if (section != open_section) {
      if (!open_section.empty()) out << YAML::EndMap;
      out << YAML::Key << section << YAML::Value << YAML::BeginMap;
      open_section = section;
    }
    out << YAML::Key << settings::name_in_section(b.info->name) << YAML::Value;
    emit(out, b.target);
  }
  if (!open_section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const auto& row : pretrain_settings()) keys.push_back(row.info.name);
  return keys;
}

void check_inputs_exist(const PretrainConfig& config) {
  std::error_code ec;
  if (!fs::is_directory(config.data.tokenizer, ec)) {
    throw DataError(config.data.tokenizer, "", "data.tokenizer",
                    "the tokenizer directory does not exist (make one with `dialtree tokenizer "
                    "train --input <text file> --out " +
                        config.data.tokenizer + "`; scripts/run.sh does)");
  }
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"data.labelled", &config.data.labelled}, {"data.unlabelled", &config.data.unlabelled}};
  for (const auto& [key, list] : lists) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string& path = (*list)[i];
      const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
      if (!fs::is_regular_file(path, ec)) {
        throw DataError(path, "", field,
                        "the input file does not exist or is not a file (`dialtree sts convert` "
                        "writes sts/1 files; scripts/run.sh writes out/sts/)");
      }
      std::ifstream probe(path);
      if (!probe) throw DataError(path, "", field, "the input file cannot be read");
    }
  }
  if (!config.model_name_or_path.empty() && !fs::is_directory(config.model_name_or_path, ec)) {
    throw DataError(config.model_name_or_path, "", "model_name_or_path",
                    "the model bundle directory does not exist");
  }
  if (!config.resume_from_checkpoint.empty() && config.resume_from_checkpoint != "latest" &&
      !fs::is_directory(config.resume_from_checkpoint, ec)) {
    throw DataError(config.resume_from_checkpoint, "", "resume_from_checkpoint",
                    "the checkpoint directory does not exist");
  }
}

}  // namespace dialtree::trainer
