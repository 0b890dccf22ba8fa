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
#include "common/strict_yaml.h"
#include "common/text_distance.h"
#include "common/utf8.h"
#include "common/value_range.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::trainer {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Schema: one row per key, bound to its struct member. Section "" is the top level.

using strict_yaml::kMaxSize;

using Target =
    std::variant<int*, std::int64_t*, double*, bool*, std::string*, std::vector<std::string>*>;

// A row: the key, its member and, for a number with fixed bounds, its allowed range
// (common/value_range.h), checked by Validator::ranges. Rules that depend on other keys or on the
// machine (threads, data.contrastive_shard_size, the model: section's own rules) stay in the
// Validator's code.
struct FieldSpec {
  const char* section;
  const char* name;
  Target (*bind)(PretrainConfig&);
  std::optional<Range> range;
};

// clang-format off
#define DT_TOP(m, ...) FieldSpec{"", #m, [](PretrainConfig& c) -> Target { return &c.m; }, \
                                 std::optional<Range>(__VA_ARGS__)}
#define DT_SUB(s, m, ...) FieldSpec{#s, #m, [](PretrainConfig& c) -> Target { return &c.s.m; }, \
                                    std::optional<Range>(__VA_ARGS__)}
// clang-format on

const std::vector<FieldSpec>& specs() {
  static const std::vector<FieldSpec> table = {
      DT_TOP(output_dir),
      DT_TOP(max_steps, at_least(0, "0 = train for num_train_epochs")),
      DT_TOP(num_train_epochs, between(1, 1000000)),
      DT_TOP(per_device_train_batch_size, between(1, kMaxSize)),
      DT_TOP(unlabelled_batch_size, between(1, kMaxSize)),
      DT_TOP(learning_rate, greater_than(0)),
      DT_TOP(weight_decay, at_least(0)),
      DT_TOP(adam_beta1, Range{0, true, 1, false}),
      DT_TOP(adam_beta2, Range{0, true, 1, false}),
      DT_TOP(adam_epsilon, greater_than(0)),
      DT_TOP(warmup_ratio, between(0, 1)),
      DT_TOP(lr_scheduler_type),
      DT_TOP(max_grad_norm, at_least(0)),
      DT_TOP(gradient_accumulation_steps, between(1, kMaxSize)),
      DT_TOP(seed, at_least(0)),
      DT_TOP(data_seed, at_least(0)),
      DT_TOP(logging_steps, at_least(1)),
      DT_TOP(save_steps, at_least(0, "0 = save only the final model")),
      DT_TOP(save_total_limit, at_least(0, "0 = keep every checkpoint")),
      DT_TOP(eval_steps, at_least(0, "0 = no evaluation during pretraining")),
      DT_TOP(eval_tasks),
      DT_TOP(eval_data_dir),
      DT_TOP(metric_for_best_model),
      DT_TOP(greater_is_better),
      DT_TOP(load_best_model_at_end),
      DT_TOP(model_name_or_path),
      DT_TOP(overwrite_output_dir),
      DT_TOP(resume_from_checkpoint),
      DT_TOP(bf16),
      DT_TOP(device),
      DT_TOP(padding_free),
      DT_TOP(threads),
      DT_TOP(ddp_backend),
      DT_TOP(ddp_timeout, at_least(1, "seconds")),
      DT_TOP(ddp_bucket_cap_mb, between(1, 1 << 16)),
      DT_TOP(ddp_health_checks),
      DT_TOP(ddp_straggler_ratio, greater_than(1)),
      DT_TOP(ddp_straggler_windows, between(1, 1000000)),
      DT_TOP(ddp_hang_timeout_factor, greater_than(1)),
      DT_TOP(ddp_hang_timeout_min, greater_than(0)),
      DT_SUB(model, vocab_size),
      DT_SUB(model, hidden_size),
      DT_SUB(model, num_hidden_layers),
      DT_SUB(model, num_attention_heads),
      DT_SUB(model, intermediate_size),
      DT_SUB(model, hidden_dropout_prob),
      DT_SUB(model, attention_probs_dropout_prob),
      DT_SUB(model, embedding_dropout_prob),
      DT_SUB(model, ffn_dropout_prob),
      DT_SUB(model, max_position_embeddings),
      DT_SUB(model, layer_norm_eps),
      DT_SUB(model, type_vocab_size),
      DT_SUB(model, initializer_range),
      DT_SUB(model, max_turns),
      DT_SUB(model, projection_views),
      DT_SUB(model, projection_dim),
      DT_SUB(data, tokenizer),
      DT_SUB(data, labelled),
      DT_SUB(data, unlabelled),
      DT_SUB(data, max_len, between(3, kMaxSize, "at least one sub-word and two role markers")),
      DT_SUB(data, max_utt_len, between(1, kMaxSize)),
      DT_SUB(data, max_ctx_turn, between(1, kMaxSize)),
      DT_SUB(data, trigger_role),
      DT_SUB(data, contrastive_shard_size),
      DT_SUB(loss, temperature, greater_than(0)),
      DT_SUB(loss, base_temperature, greater_than(0)),
      DT_SUB(loss, contrastive_weight, at_least(0)),
      DT_SUB(loss, self_supervised_weight, at_least(0)),
      DT_SUB(loss, mlm_weight, at_least(0)),
      DT_SUB(loss, mlm_probability, Range{0, false, 1, false}),
      DT_SUB(loss, score_mode),
      DT_SUB(loss, gather_across_devices),
      DT_SUB(loss, language_objective),
      DT_SUB(loss, generator_size, Range{0, false, 1, true}),
      DT_SUB(loss, discriminator_weight, at_least(0)),
  };
  return table;
}

#undef DT_TOP
#undef DT_SUB

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"model", "data", "loss"};
  return names;
}

bool is_section(const std::string& name) {
  const auto& s = section_names();
  return std::find(s.begin(), s.end(), name) != s.end();
}

std::string full_key(const std::string& section, const std::string& name) {
  return section.empty() ? name : section + "." + name;
}

const FieldSpec* find_spec(const std::string& section, const std::string& name) {
  for (const auto& f : specs()) {
    if (section == f.section && name == f.name) return &f;
  }
  return nullptr;
}

// Keys whose present null value means "empty" rather than a type error.
bool nullable(const FieldSpec& f) {
  return std::string(f.section).empty() && (std::string(f.name) == "resume_from_checkpoint" ||
                                            std::string(f.name) == "model_name_or_path");
}

using strict_yaml::describe;
using strict_yaml::fail;
using strict_yaml::kCommandLine;
using strict_yaml::Origin;
using strict_yaml::Source;
using strict_yaml::trim;
using strict_yaml::ValueContext;
using Origins = std::map<std::string, Origin>;

// ---------------------------------------------------------------------------------------------
// Key suggestions.

// Names other tools use for a key of ours that edit distance would not find.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table = {
      {"lr", "learning_rate"},
      {"fp16", "bf16"},
      {"warmup_steps", "warmup_ratio"},
      {"dataloader_seed", "data_seed"},
      {"num_layers", "model.num_hidden_layers"},
      {"dropout", "model.hidden_dropout_prob"},
      {"tau", "loss.temperature"},
      {"mlm_ratio", "loss.mlm_weight"},
      {"num_threads", "threads"},
  };
  return table;
}

// The closest valid key to `name` found in `section` (any section may hold the answer), or "".
std::string closest_key(const std::string& section, const std::string& name) {
  const std::string n = ascii_lower(name);
  const auto alias = aliases().find(n);
  if (alias != aliases().end()) return alias->second;
  std::string best;
  std::size_t best_score = std::numeric_limits<std::size_t>::max();
  auto consider = [&](const std::string& cand_section, const std::string& cand_name) {
    const std::optional<std::size_t> d = suggestion_distance(name, cand_name);
    if (!d) return;
    std::size_t score = *d;
    if (cand_section != section) score += 1;
    if (score < best_score) {
      best_score = score;
      best = full_key(cand_section, cand_name);
    }
  };
  for (const auto& f : specs()) consider(f.section, f.name);
  for (const auto& s : section_names()) consider("", s);
  return best;
}

[[noreturn]] void unknown_key(const Origin& at, const std::string& section,
                              const std::string& name) {
  const std::string key = full_key(section, name);
  std::string message = "unknown key '" + key + "'";
  const std::string hint = closest_key(section, name);
  if (!hint.empty()) {
    message += " — did you mean '" + hint + "'?";
  } else {
    message += "; valid keys " +
               (section.empty() ? std::string("at the top level") : "in '" + section + ":'") + ": ";
    bool first = true;
    for (const auto& f : specs()) {
      if (section != f.section) continue;
      message += (first ? "" : ", ") + std::string(f.name);
      first = false;
    }
    if (section.empty()) {
      for (const auto& s : section_names()) message += ", " + s;
    }
  }
  fail(at, key, message);
}

// ---------------------------------------------------------------------------------------------
// Decoding a document (or one override) into the struct.

std::string key_name(const Source& source, const YAML::Node& key, const std::string& section) {
  if (!key.IsScalar()) {
    fail(source.at(key), section, "keys must be plain names, found " + describe(key));
  }
  return key.Scalar();
}

void read_field(const Source& source, const FieldSpec& spec, const YAML::Node& key_node,
                const YAML::Node& value, PretrainConfig& config, Origins& origins) {
  ValueContext ctx{source, key_node, full_key(spec.section, spec.name), nullable(spec)};
  std::visit([&](auto* target) { strict_yaml::read_value(ctx, value, target); }, spec.bind(config));
  origins[ctx.key] = source.at(value, &key_node);
}

void read_section(const Source& source, const std::string& section, const YAML::Node& map,
                  PretrainConfig& config, Origins& origins) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string name = key_name(source, kv.first, section);
    const Origin at = source.at(kv.first);
    if (!seen.insert(name).second) {
      fail(at, full_key(section, name), "duplicate key '" + full_key(section, name) + "'");
    }
    if (section.empty() && is_section(name)) {
      if (kv.second.IsNull()) continue;  // an empty section: every key keeps its default
      if (!kv.second.IsMap()) {
        fail(at, name, "expected a mapping of '" + name + "' keys, found " + describe(kv.second));
      }
      read_section(source, name, kv.second, config, origins);
      continue;
    }
    const FieldSpec* spec = find_spec(section, name);
    if (spec == nullptr) unknown_key(at, section, name);
    read_field(source, *spec, kv.first, kv.second, config, origins);
  }
}

void read_document(const Source& source, const YAML::Node& doc, PretrainConfig& config,
                   Origins& origins) {
  if (doc.IsNull()) return;
  if (!doc.IsMap()) {
    fail(source.at(doc), "",
         "the config must be a mapping of keys to values, found " + describe(doc));
  }
  read_section(source, "", doc, config, origins);
}

void apply_override(const std::string& text, PretrainConfig& config, Origins& origins) {
  const Source source{kCommandLine, text};
  const Origin at{kCommandLine, "override '" + text + "'"};
  const auto [key, value] = strict_yaml::split_override(text, "key.sub");
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const auto dot = key.find('.', from);
    parts.push_back(key.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  if (parts.size() == 1 && is_section(parts[0])) {
    if (!value.IsMap()) {
      fail(at, key, "expected a mapping of '" + key + "' keys, found " + describe(value));
    }
    read_section(source, parts[0], value, config, origins);
    return;
  }
  const FieldSpec* spec = nullptr;
  if (parts.size() == 1) {
    spec = find_spec("", parts[0]);
    if (spec == nullptr) unknown_key(at, "", parts[0]);
  } else if (parts.size() == 2 && is_section(parts[0])) {
    spec = find_spec(parts[0], parts[1]);
    if (spec == nullptr) unknown_key(at, parts[0], parts[1]);
  } else {
    // No such section (or too deep): suggest from the part that names the key.
    const bool in_section = is_section(parts[0]);
    const std::string hint =
        closest_key(in_section ? parts[0] : "", parts[in_section ? 1 : parts.size() - 1]);
    fail(at, key,
         "unknown key '" + key + "'" + (hint.empty() ? "" : " — did you mean '" + hint + "'?"));
  }
  read_field(source, *spec, value, value, config, origins);
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

  // The ranges of the schema's rows in `section` (FieldSpec::range), in table order.
  void ranges(const std::string& section) const {
    // bind() takes a mutable config to serve the reader too; here it is only read.
    auto& config = const_cast<PretrainConfig&>(c_);
    for (const auto& f : specs()) {
      if (!f.range || section != f.section) continue;
      const std::string problem = std::visit(
          [&](const auto* target) -> std::string {
            using T = std::decay_t<decltype(*target)>;
            if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
              return range_problem(*target, *f.range);
            } else {
              throw std::logic_error("trainer config: a range on the non-numeric key " +
                                     full_key(f.section, f.name));
            }
          },
          f.bind(config));
      if (!problem.empty()) fail_at(full_key(f.section, f.name), problem);
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
  if (l.gather_across_devices && d.contrastive_shard_size != 0) {
    fail_at(blame("loss.gather_across_devices", "data.contrastive_shard_size"),
            "loss.gather_across_devices needs data.contrastive_shard_size 0 (the gathered "
            "candidate set is not cut into shards); got " +
                std::to_string(d.contrastive_shard_size));
  }
  const bool any_term = l.mlm_weight > 0 || (!d.labelled.empty() && l.contrastive_weight > 0) ||
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
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
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
  // bind() needs a mutable config; it is only read here.
  auto& ma = const_cast<PretrainConfig&>(a);
  auto& mb = const_cast<PretrainConfig&>(b);
  for (const auto& f : specs()) {
    const Target ta = f.bind(ma);
    const Target tb = f.bind(mb);
    const bool same = std::visit(
        [&](auto* x) { return *x == *std::get<std::remove_reference_t<decltype(x)>>(tb); }, ta);
    if (!same) return false;
  }
  return true;
}

PretrainConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                            const std::vector<std::string>& overrides) {
  const std::optional<YAML::Node> doc = strict_yaml::load_document(yaml_text, source_name);
  PretrainConfig config;
  Origins origins;
  if (doc) read_document(Source{source_name, ""}, *doc, config, origins);
  strict_yaml::check_utf8(yaml_text, source_name);  // comments and keys (values checked above)
  for (const auto& o : overrides) apply_override(o, config, origins);
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
  auto& c = const_cast<PretrainConfig&>(config);  // bind() needs it mutable; only read
  YAML::Emitter out;
  out << YAML::Comment("dialtree pretraining config, resolved: every key with its effective value")
      << YAML::Newline;
  out << YAML::BeginMap;
  std::string open_section;
  for (const auto& f : specs()) {
    const std::string section = f.section;
    if (section != open_section) {
      if (!open_section.empty()) out << YAML::EndMap;
      out << YAML::Key << section << YAML::Value << YAML::BeginMap;
      open_section = section;
    }
    out << YAML::Key << f.name << YAML::Value;
    emit(out, f.bind(c));
  }
  if (!open_section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const auto& f : specs()) keys.push_back(full_key(f.section, f.name));
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
