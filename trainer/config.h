// The pretraining configuration (docs/training.md "Config", docs/method.md §4.3-§5): plain structs
// with defaults, read from one YAML file plus `key.sub=value` command-line overrides, strictly.
//
// Strictness (docs/failure-cases.md C27, C37):
// - An unknown key is an error naming its full path and, where one is close, the valid key meant.
// - A present key must have the right type. Quoted scalars are strings, so `num_train_epochs: "1"`
//   is an error; integers are plain decimal digits (`12.5`, `1e3`, `010` are not integers);
//   floats accept integers and the YAML 1.2 forms `0.07`, `.5`, `1e-5`; booleans are only
//   true/false (`yes`, `on` are errors). A present key with an empty value (null) is an error,
//   except for `resume_from_checkpoint` and `model_name_or_path`, where null means "none".
// - Defaults apply only to keys that are absent. Duplicate keys are errors.
// - Ranges and cross-field rules are checked after the overrides are applied.
// Every error is a dialtree::DataError naming the file (or "<command line>"), the line (or the
// override) and the full key path.
//
// Paths in `data:`, `output_dir` and `resume_from_checkpoint` are used as written: a relative path
// is relative to the current working directory of the process (as in HF Trainer), NOT to the
// config file's directory. The committed recipes are meant to be run from the repository root.
// load_config() does not check that input files exist (so print-config works without data); call
// check_inputs_exist() before training.
//
// Torch-free: this header and config.cpp need only yaml-cpp, common/, sts/views.h and the
// encoder schema of model/config.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings_fwd.h"
#include "model/config.h"
#include "readers/dialoglue_tasks.h"
#include "sts/views.h"

namespace dialtree::trainer {

/// CPUs this process may run on (its affinity mask; at least 1): the default and the upper bound
/// of PretrainConfig::threads.
int available_cpus();

/// The defaults of the `model:` section: model::EncoderConfig (the one encoder schema, with the
/// HF BERT config.json names) at the paper's BERT-base sizes, with SPACE-2's pretraining dropout
/// 0.2 in all four places and vocab_size 0 (= take the tokenizer's vocabulary size). pad and
/// [CLS] ids are not keys of the section: they come from the tokenizer. Further rules of the
/// section, checked by load_config(): max_position_embeddings > data.max_utt_len + 1 (positions
/// restart in every utterance, which has two role markers) and max_turns >= data.max_ctx_turn
/// (docs/method.md §1).
model::EncoderConfig pretraining_model_defaults();

/// `data:` — inputs and dialog serialisation (docs/method.md §1.5, §4.5).
struct DataConfig {
  /// Tokenizer directory (a SentencePiece model or a WordPiece vocab.txt). Required.
  std::string tokenizer;
  /// Labelled sts/1 JSONL files (each its own dataset: batches never mix datasets).
  std::vector<std::string> labelled;
  /// Unlabelled sts/1 JSONL or plain-text files. At least one of labelled/unlabelled is non-empty.
  std::vector<std::string> unlabelled;
  /// Sequence length cap after left truncation (SPACE-2: 256).
  int max_len = 256;
  /// Sub-words kept per utterance, its last ones (SPACE-2: 50). At most max_len - 2.
  int max_utt_len = 50;
  /// Utterances kept per example, the current one included (SPACE-2: 16).
  int max_ctx_turn = 16;
  /// Roles whose turns become examples: "user", "system" or "user_system" (SPACE-2: "user").
  std::string trigger_role = "user";
  /// Examples per contrastive-loss shard: SPACE-2 computes the loss per GPU replica, i.e. over
  /// shards of 16 of its 128-example batches (docs/method.md §4.5). 0 = the whole batch; otherwise
  /// >= 2 and a divisor of both batch sizes.
  int contrastive_shard_size = 16;
  /// Labelled batches drawn to share one element of this view (docs/training.md "Batches that
  /// share values"): "" (default, batches drawn at random) or a view name ("V", "SV", ...).
  std::string group_by_view;
  /// With group_by_view: examples per group sharing a key, >= 2 and a divisor of
  /// data.contrastive_shard_size (or of per_device_train_batch_size when that is 0).
  int group_size = 4;
};

/// `loss:` — the objective of docs/method.md §4.3:
/// L = contrastive_weight·L_sup + self_supervised_weight·L_self + mlm_weight·(MLM_l + MLM_u).
struct LossConfig {
  /// Contrastive temperature τ (> 0).
  double temperature = 0.07;
  /// Base temperature τ_base (> 0); the loss is scaled by τ/τ_base.
  double base_temperature = 0.07;
  /// Weight of the soft-mask contrastive loss on labelled batches (>= 0).
  double contrastive_weight = 1.0;
  /// Weight of the self-supervised (identity-mask) contrastive loss on unlabelled batches (>= 0).
  double self_supervised_weight = 1.0;
  /// Weight of the token-mean MLM loss on both streams (>= 0).
  double mlm_weight = 0.1;
  /// Probability that a sub-word is chosen for random masking, in (0, 1).
  double mlm_probability = 0.15;
  /// Whole-word masking (docs/training.md "Whole-word masking"): mlm_probability chooses words,
  /// and every sub-word of a chosen word becomes a target. false: each sub-word on its own.
  bool whole_word_mask = false;
  /// "per_view": one contrastive loss per projection view with that view's scores, averaged
  /// (SPACE-2); "combined": one loss with the views' scores averaged.
  std::string score_mode = "per_view";
  /// Data-parallel runs only: false (default) keeps SPACE-2's per-device candidate sets, each
  /// rank's contrastive loss sees only its own batch (docs/method.md §4.5); true all-gathers the
  /// projected embeddings of every rank's batch of the micro-step, so each loss has the
  /// world_size x larger candidate set (sentence-transformers' gather_across_devices). Needs
  /// data.contrastive_shard_size 0. In a single process the gathered set is the local batch.
  bool gather_across_devices = false;
  /// The language term (docs/training.md "Replaced-token detection"): "mlm" (masked language
  /// modelling, SPACE-2's) or "rtd" (ELECTRA's replaced-token detection: a generator trained
  /// by MLM fills the masked positions, the encoder tells for every token whether it was
  /// replaced). mlm_weight weighs either; mlm_probability chooses the generator's targets.
  std::string language_objective = "mlm";
  /// rtd only: the generator's depth as a fraction of model.num_hidden_layers, in (0, 1]
  /// (rounded, at least 1 layer; same width as the encoder, token embeddings shared).
  double generator_size = 0.25;
  /// rtd only: ELECTRA's λ, the weight of the discriminator's BCE beside the generator's MLM.
  double discriminator_weight = 50.0;
  /// rtd only: the weight of the encoder's own MLM loss beside the discriminator's, >= 0 (0:
  /// ELECTRA's objective). The encoder predicts the original token at each masked position of
  /// the corrupted input with its MLM head (ELECTRA's "Replace MLM" term kept beside RTD), so
  /// that it keeps learning token identities as an MLM stage does (docs/training.md
  /// "Replaced-token detection").
  double encoder_mlm_weight = 0.0;
  /// Weight of the token-level tree term on labelled batches, >= 0 (docs/training.md "A
  /// token-level tree term"; 0 = SPACE-2's objective): a supervised contrastive loss over the
  /// final states of value-mention tokens in the two dropout views, positives the tokens of
  /// mentions of the same slot. Needs data.labelled.
  double token_contrastive_weight = 0.0;
};

/// The whole pretraining run. Top-level keys use the HF TrainingArguments names. Defaults are the
/// paper's recipe (docs/method.md §4.4, §5), except output_dir and data.tokenizer, which are
/// required.
struct PretrainConfig {
  /// Run directory (config.yaml, metrics.jsonl, checkpoint-*/, final/). Required.
  std::string output_dir;
  /// Total optimisation steps; 0 = num_train_epochs epochs. When > 0 it overrides
  /// num_train_epochs.
  std::int64_t max_steps = 0;
  /// Epochs, each max(#labelled batches, #unlabelled batches) steps (docs/method.md §4.5). >= 1.
  int num_train_epochs = 60;
  /// Labelled examples per step (SPACE-2: 128).
  int per_device_train_batch_size = 128;
  /// Unlabelled examples per step (SPACE-2: 128).
  int unlabelled_batch_size = 128;
  /// Peak learning rate of AdamW (SPACE-2: 1e-5).
  double learning_rate = 1e-5;
  /// AdamW decoupled weight decay (SPACE-2: 0).
  double weight_decay = 0.0;
  /// AdamW β1, in [0, 1).
  double adam_beta1 = 0.9;
  /// AdamW β2, in [0, 1).
  double adam_beta2 = 0.999;
  /// AdamW ε (SPACE-2 / transformers 2.9 default: 1e-6), > 0.
  double adam_epsilon = 1e-6;
  /// Fraction of the total steps spent in linear warm-up, in [0, 1].
  double warmup_ratio = 0.1;
  /// Learning-rate schedule; only "linear" (warm-up, then linear decay to 0) is supported.
  std::string lr_scheduler_type = "linear";
  /// Gradient-norm clipping threshold; 0 = no clipping (SPACE-2: 5.0).
  double max_grad_norm = 5.0;
  /// Micro-batches accumulated per optimiser step (SPACE-2: 1).
  int gradient_accumulation_steps = 1;
  /// Seed of model initialisation, dropout and masking (SPACE-2: 11), >= 0.
  std::int64_t seed = 11;
  /// Seed of the data order; when absent it is resolved to `seed`. Kept apart from `seed` and
  /// never time-based, so the batch order depends on nothing else (docs/failure-cases.md C34). >=
  /// 0.
  std::int64_t data_seed = 11;
  /// Log metrics every this many steps (>= 1).
  std::int64_t logging_steps = 10;
  /// Save a checkpoint every this many steps; 0 = only the final model.
  std::int64_t save_steps = 0;
  /// Checkpoints kept (oldest pruned first); 0 = keep all.
  int save_total_limit = 0;
  /// Run the representation probe (docs/evaluation.md "Probe") every this many steps and at the
  /// end; its figures go to metrics.jsonl as eval_probe_<task>_accuracy (fit on train_10,
  /// scored on val: never test). 0 = no evaluation during pretraining.
  std::int64_t eval_steps = 0;
  /// Tasks the probe scores, by name (readers/dialoglue_tasks.h, TaskSet::Probe): intent tasks
  /// (banking, clinc, hwu; their mean is eval_probe_mean_accuracy) and tagging tasks under the
  /// token-level probe (restaurant8k, dstc8, top: eval_probe_<task>_slot_f1 /
  /// eval_probe_top_exact_match, their mean eval_probe_mean_tagging). Default: the intent tasks.
  std::vector<std::string> eval_tasks = readers::dialoglue_task_names(readers::TaskSet::Intent);
  /// DialoGLUE data folder for eval_tasks; empty = $DIALTREE_DATA, else
  /// ../shared/data/dialoglue relative to the working directory.
  std::string eval_data_dir;
  /// The metrics.jsonl key that decides the best model (e.g. eval_probe_mean_accuracy; an
  /// "eval_" prefix is added when missing, as in HF). Empty = none.
  std::string metric_for_best_model;
  /// Whether a larger metric_for_best_model is better (HF: true for accuracies).
  bool greater_is_better = true;
  /// Keep the best evaluation's weights in `best/` and make `final/` those weights (HF's
  /// load_best_model_at_end). Needs eval_steps > 0 and metric_for_best_model.
  bool load_best_model_at_end = false;
  /// Model bundle whose weights the run starts from (HF's name for it), e.g. a BERT imported
  /// with `dialtree import-hf`, as SPACE-2 starts from BERT / ConvBERT. Its architecture must
  /// equal the `model:` section's (dropouts and initializer_range excepted), except that
  /// model.projection_views may keep a subset of the bundle's views (the intent stage keeps
  /// "I": those rows of the projection are copied); an intent or tag head in it is left out.
  /// Empty = random initialisation. resume_from_checkpoint wins.
  std::string model_name_or_path;
  /// Let a fresh run (no resume_from_checkpoint) replace a finished run's final/ in output_dir
  /// (HF's overwrite_output_dir). False: such a run is refused before anything loads, naming the
  /// folder (docs/training.md "Run directory").
  bool overwrite_output_dir = false;
  /// Checkpoint directory to resume from; empty = start fresh; "latest" = the newest complete
  /// checkpoint of output_dir, or a fresh start when there is none (restarts, docs/training.md
  /// "Health checks").
  std::string resume_from_checkpoint;
  /// Compute matrix products in bfloat16 (autocast); weights and optimiser state stay fp32.
  bool bf16 = false;
  /// Where the model trains: auto (the first GPU when LibTorch sees one, else the CPU), cpu,
  /// cuda or cuda:N (common/device_spec.h, docs/gpu.md). Data-parallel ranks need cpu.
  std::string device = "auto";
  /// Run the encoder padding-free (TRL's name): the blocks compute only the real tokens of each
  /// batch and attention pads per bucket of similar lengths (docs/performance.md "Padding-free
  /// batches"). Same losses and gradients as padded batches up to float rounding; false pads
  /// every batch to its longest example.
  bool padding_free = true;
  /// Intra-op threads, in [1, available_cpus()] (docs/failure-cases.md C27); default
  /// available_cpus().
  int threads = available_cpus();
  /// Data-parallel backend (RANK/WORLD_SIZE set, or `dialtree train --nproc-per-node N`): only
  /// "gloo" (CPU) is built.
  std::string ddp_backend = "gloo";
  /// Seconds the rendezvous and every collective may wait for the other ranks (HF default 1800).
  std::int64_t ddp_timeout = 1800;
  /// Gradients are all-reduced in buckets of at most this many MiB (HF / PyTorch DDP default 25).
  int ddp_bucket_cap_mb = 25;
  /// Data-parallel health checks (docs/training.md "Health checks"): per-rank step timing in
  /// metrics.jsonl and the log, straggler reports and the hang watchdog.
  bool ddp_health_checks = true;
  /// A rank whose compute seconds per step exceed this many times the median of its peers' is
  /// an outlier in a logging window (> 1).
  double ddp_straggler_ratio = 1.5;
  /// An outlier is reported after this many consecutive logging windows (>= 1).
  int ddp_straggler_windows = 2;
  /// The hang timeout is max(ddp_hang_timeout_min, ddp_hang_timeout_factor × the median step
  /// seconds); until a step has been measured it is ddp_timeout (> 1).
  double ddp_hang_timeout_factor = 20.0;
  /// Lower bound of the hang timeout, seconds (> 0).
  double ddp_hang_timeout_min = 60.0;
  /// The encoder (`model:`).
  model::EncoderConfig model = pretraining_model_defaults();
  /// Inputs and serialisation (`data:`).
  DataConfig data;
  /// The objective (`loss:`).
  LossConfig loss;
};

/// Field-by-field equality over every configuration key.
bool operator==(const PretrainConfig& a, const PretrainConfig& b);
/// Negation of operator==.
inline bool operator!=(const PretrainConfig& a, const PretrainConfig& b) {
  return !(a == b);
}

/// Reads `yaml_path`, applies `overrides` (each "key.sub=value", the value parsed as a YAML
/// scalar or flow collection, e.g. `data.labelled=[a.jsonl,b.jsonl]`; later ones win), resolves
/// the defaults that depend on the machine or on other keys (threads, data_seed) and validates.
/// @throws DataError for a missing or unreadable file, a YAML syntax error, more than one YAML
///   document, an unknown key, a wrong type, a malformed override or a failed validation rule.
PretrainConfig load_config(const std::string& yaml_path,
                           const std::vector<std::string>& overrides = {});

/// As load_config(), from YAML text; `source_name` stands in for the file name in errors.
PretrainConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                            const std::vector<std::string>& overrides = {});

/// The resolved configuration as YAML: every key with its effective value, in schema order, with
/// a leading comment. parse_config(dump_config(c), ...) == c for every valid c.
std::string dump_config(const PretrainConfig& config);

/// The config's settings, one row per key, full paths as names ("learning_rate",
/// "model.hidden_size"): the top-level keys, then `model:` (the rows of
/// model::encoder_settings() that a training YAML sets), `data:` and `loss:`. The one table
/// behind the reader, the range checks, dump_config() and `dialtree print-config --settings-table
/// trainer` (docs/training.md "Config"); rules across keys or machine limits stay in the
/// validator (threads, one-of lists, data.contrastive_shard_size, the encoder's own rules).
const std::vector<settings::Setting<PretrainConfig>>& pretrain_settings();

/// Every valid full key path in schema order, e.g. "learning_rate", "model.hidden_size".
std::vector<std::string> config_keys();

/// Checks that data.tokenizer is a directory and that every data.labelled / data.unlabelled entry
/// is a readable regular file, and (when set) that resume_from_checkpoint is a directory.
/// @throws DataError naming the missing path and its key, e.g. field 'data.labelled[2]'.
void check_inputs_exist(const PretrainConfig& config);

}  // namespace dialtree::trainer
