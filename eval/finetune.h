// Fine-tuning a dialtree model bundle on a DialoGLUE task and predicting its test split. Intent
// tasks: SPACE-2's intent recipe (docs/evaluation.md "Fine-tuning recipe"): a linear classifier
// on the [CLS] head vector, cross-entropy, optionally R-Drop's symmetric KL between two dropout
// passes and an auxiliary MLM term on the same utterances; no CAN post-processing (it picks
// with test labels). Slot tasks and TOP: word-level BIO tagging (plus TOP's root intent).
// All: AdamW with linear warm-up and decay, model selection on the val metric with optional
// early stopping, the test split predicted once with the selected weights. Torch stays inside
// finetune.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/tasks.h"

namespace dialtree::eval {

/// Fine-tuning hyper-parameters (HF Trainer names where the concept exists).
struct FinetuneOptions {
  int num_train_epochs = 20;
  int per_device_train_batch_size = 32;
  int per_device_eval_batch_size = 128;
  double learning_rate = 1e-4;
  double warmup_ratio = 0.1;
  double weight_decay = 0.01;
  double adam_epsilon = 1e-6;
  double max_grad_norm = 5.0;
  /// Replaces the bundle's hidden/attention/embedding/FFN dropout while fine-tuning (SPACE-2
  /// fine-tunes intent tasks with 0.25); < 0 keeps the bundle's values.
  double dropout = 0.25;
  int max_utt_len = 64;  ///< sub-word ids kept per utterance (its last ones, docs/method.md §1.5)
  /// bf16 autocast for forward passes (weights stay fp32): always on CUDA, on the CPU only
  /// where it has native bf16 (common/cpu_features.h), fp32 otherwise.
  bool bf16 = true;
  /// Where fine-tuning runs: auto (the first GPU when LibTorch sees one, else the CPU), cpu,
  /// cuda or cuda:N (common/device_spec.h, docs/gpu.md).
  std::string device = "auto";
  /// Re-initialise every weight (HF BERT initialisation) instead of starting from the bundle's:
  /// the "from scratch" baseline with the same architecture and tokenizer.
  bool from_scratch = false;
  /// Intent tasks: weight of R-Drop's symmetric KL, ½[KL(p‖q) + KL(q‖p)] summed over classes
  /// and averaged over the batch, between the class distributions of two dropout passes of the
  /// same batch (one 2B forward; the cross-entropy is then the mean over both passes).
  /// SPACE-2's intent scripts: 5.0. 0 = one pass, plain cross-entropy. >= 0.
  double rdrop_weight = 0.0;
  /// Intent tasks: weight of the auxiliary token-mean MLM loss on a masked copy of the batch
  /// (BERT 80/10/10 masking at mlm_probability). SPACE-2's intent scripts: 0.1. 0 = off. >= 0.
  double mlm_weight = 0.0;
  /// Probability that a sub-word is an MLM target, in (0, 1) (BERT / SPACE-2: 0.15).
  double mlm_probability = 0.15;
  /// Stop when the val metric has not improved for this many epochs in a row (HF's
  /// EarlyStoppingCallback), not counting epochs that end inside the learning-rate warm-up; the
  /// best epoch's weights are kept either way. 0 = never stop early.
  int early_stopping_patience = 0;
  /// Intent tasks: how the new classifier starts (docs/evaluation.md "Linear-probe
  /// initialisation"). "random": HF BERT initialisation. "linear_probe": LP-FT (Kumar et al.
  /// 2022, "Fine-Tuning can Distort Pretrained Features"): before the first step, the frozen
  /// [CLS] vectors of the training texts (eval mode, no dropout) are fitted by L2 logistic
  /// regression (eval/probe.h fit_logistic, C = linear_probe_c) and its weights become the
  /// classifier's, so that fine-tuning starts from the best linear head on the pretrained
  /// features instead of pulling them towards a random one.
  std::string classifier_init = "random";
  /// Inverse L2 strength of the linear-probe fit (scikit-learn's C), > 0.
  double linear_probe_c = 1.0;
};

/// Progress of one epoch.
struct EpochInfo {
  int epoch = 0;                   ///< 1-based
  int epochs = 0;                  ///< num_train_epochs
  double train_loss = 0;           ///< mean cross-entropy of the epoch's batches
  double val_accuracy = 0;         ///< fraction in [0, 1]
  double examples_per_second = 0;  ///< training throughput of the epoch
  double learning_rate = 0;        ///< learning rate of the epoch's last step
};

/// The outcome of one fine-tuning run.
struct IntentRunResult {
  int best_epoch = 0;  ///< 1-based epoch of the selected weights
  int epochs_run = 0;  ///< epochs trained (fewer than num_train_epochs after early stopping)
  std::vector<EpochInfo> curve;               ///< one entry per epoch run (the val curve)
  double best_val_accuracy = 0;               ///< fraction
  std::vector<std::string> test_predictions;  ///< label strings, test.csv order
  double train_seconds = 0;                   ///< wall time of all epochs (incl. val passes)
  double train_examples_per_second = 0;       ///< training examples / training-step seconds
  double predict_examples_per_second = 0;     ///< test examples / test prediction seconds
};

/// Fine-tunes the bundle at `bundle_dir` (model/bundle.h) on `task.train` with seed `seed`
/// (weights of the new classifier, dropout, batch order, MLM masks), selects the epoch with the
/// best `task.val` accuracy (earliest on ties; early stopping per
/// options.early_stopping_patience), and predicts `task.test` with it.
/// @param on_epoch called after every epoch (may be empty)
/// @param save_dir when not empty, the selected model is saved there as a bundle (model/
///   bundle.h) with its intent head and the label names, ready for `dialtree serve` /classify
/// @throws DataError for an unreadable bundle; std::invalid_argument for bad options (a
///   non-positive epoch count or batch size, a learning rate <= 0, dropout >= 1);
///   std::runtime_error if the bundle cannot be saved.
IntentRunResult finetune_intent(const std::string& bundle_dir, const IntentTask& task,
                                const FinetuneOptions& options, std::uint64_t seed,
                                const std::function<void(const EpochInfo&)>& on_epoch = {},
                                const std::string& save_dir = {});

/// The outcome of one tagging fine-tuning run.
struct TaggingRunResult {
  int best_epoch = 0;
  int epochs_run = 0;            ///< epochs trained (early stopping may end the run sooner)
  std::vector<EpochInfo> curve;  ///< one entry per epoch run; val_accuracy holds the val score
  double best_val_score = 0;     ///< val score of `val_score` (fraction) at best_epoch
  std::vector<std::vector<std::string>> test_tags;  ///< predicted word tags per test example
  std::vector<std::string> test_intents;            ///< TOP: predicted root intents; else empty
  double train_seconds = 0;
  double train_examples_per_second = 0;
  double predict_examples_per_second = 0;
};

/// Scores predicted word tags (and TOP intents) of the val examples, as a fraction; the
/// runner passes DialoGLUE's own metric through eval/tag_mapping.h.
using TaggingScorer = std::function<double(const std::vector<std::vector<std::string>>& tags,
                                           const std::vector<std::string>& intents)>;

/// Fine-tunes the bundle on a tagging task (docs/method.md §6.2 / DialoGLUE protocol): a linear
/// tagger on the state of each word's first sub-word (cross-entropy over those positions,
/// SentencePiece or WordPiece alike), plus for TOP a root-intent classifier on [CLS] (the
/// two cross-entropies summed). Words left without a sub-word (empty, or cut by max_utt_len's
/// left truncation) are predicted "O". Selects the epoch with the best `val_score`, then
/// predicts the test split. With `save_dir`, the selected model is saved there as a bundle with
/// its tagger (and TOP's intent head), the tag and intent names, and in its recipe the task and
/// how the tagger reads a text. @throws as finetune_intent(), and std::invalid_argument when
/// options.classifier_init is not "random" (the linear-probe start is for intent tasks).
TaggingRunResult finetune_tagging(const std::string& bundle_dir, const TaggingTask& task,
                                  const FinetuneOptions& options, std::uint64_t seed,
                                  const TaggingScorer& val_score,
                                  const std::function<void(const EpochInfo&)>& on_epoch = {},
                                  const std::string& save_dir = {});

}  // namespace dialtree::eval
