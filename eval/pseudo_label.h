// Pseudo-labels for the semi-supervised intent stage (docs/training.md "Pseudo-labelled intent
// stage"): the probe's logistic regression, fitted on a task's labelled few-shot examples, labels
// the task's unlabelled training utterances; the most confident ones per predicted intent become
// sts/1 records that the intent stage reads beside the labelled ones. The selection, the pool and
// the records are torch-free (pseudo_label.cpp); embedding a model's vectors is the torch side
// (pseudo_label_model.cpp). This header stays free of LibTorch.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/probe_model.h"  // torch-free: the model and tokenizer are forward-declared
#include "eval/tasks.h"
#include "sts/format.h"

namespace dialtree::eval {

/// What `pseudo_label_task` does (the CLI's `dialtree eval pseudo-label` options).
struct PseudoLabelOptions {
  int per_label = 30;         ///< most confident pool rows kept per predicted label, >= 1
  double C = 1.0;             ///< logistic regression C, as the probe (eval/probe.h)
  /// L-BFGS iterations. More than the probe's 100 (MTEB's): an unconverged fit makes the kept
  /// set depend on float noise in the vectors (batch size, bf16); 1000 converges on DialoGLUE.
  int max_iter = 1000;
  int batch_size = 128;       ///< texts per forward pass when embedding
  int max_utt_len = 64;       ///< sub-words kept per utterance (as intent fine-tuning)
  bool bf16 = true;           ///< embed under bf16 autocast where the CPU has it natively
  std::string device = "auto";  ///< bundle runs: auto, cpu, cuda or cuda:N
};

/// @throws std::invalid_argument naming the field: per_label, max_iter, batch_size or
///   max_utt_len < 1, C <= 0.
void check_pseudo_label_options(const PseudoLabelOptions& options);

/// {"per_label", "C", "max_iter", "batch_size", "max_utt_len", "bf16", "device"}.
nlohmann::json to_json(const PseudoLabelOptions& options);

/// One kept pool row.
struct PseudoPick {
  std::size_t row = 0;    ///< row of the pool (and of the probability matrix)
  int label = 0;          ///< predicted class id
  double confidence = 0;  ///< its probability, in (0, 1]
};

/// Class probabilities [n, K] of a fitted logistic regression: the softmax of
/// decision_function() (K = model.classes.size()); for two classes [1 - σ(z), σ(z)], the binary
/// model of fit_logistic(). Column k is class model.classes[k].
/// @throws as decision_function().
Eigen::MatrixXd predict_proba(const LogisticModel& model, const ProbeMatrix& x);

/// The class-balanced confident subset: every row goes to its arg-max column (the lowest on
/// ties); within each column the `per_label` rows of highest probability are kept (ties: the
/// lower row first). `classes[k]` is the label of column k. Returned in row order.
/// @throws std::invalid_argument if per_label < 1 or classes.size() != probabilities.cols().
std::vector<PseudoPick> select_confident(const Eigen::MatrixXd& probabilities,
                                         const std::vector<int>& classes, int per_label);

/// The unlabelled pool of a task: `texts` (the training utterances, their labels never read)
/// without those that occur verbatim in `labelled` and without repeats, first occurrence kept,
/// in input order.
std::vector<std::string> unlabelled_pool(const std::vector<std::string>& texts,
                                         const std::vector<std::string>& labelled);

/// Fraction of `picks` whose label equals truth[pick.row]; 0 when there are none.
/// @throws std::out_of_range for a row past truth.
double pick_precision(const std::vector<PseudoPick>& picks, const std::vector<int>& truth);

/// The sts/1 records of the picks, in pick order: one user turn with the pool text, labelled
/// DEFAULT_DOMAIN / label_names[label] exactly as `dialtree sts convert` writes an intent CSV
/// row; id "<task>/pseudo/<row>", source `task`, extra {"pseudo_label_confidence": p}.
/// @throws std::out_of_range for a row past pool or a label past label_names.
std::vector<sts::Dialog> pseudo_dialogs(const std::string& task,
                                        const std::vector<std::string>& pool,
                                        const std::vector<PseudoPick>& picks,
                                        const std::vector<std::string>& label_names);

/// Reads pseudo-labelled records back as an intent split (self-training, docs/evaluation.md
/// "Self-training"): each record of the sts/1 file at `path` must be one turn labelled
/// DEFAULT_DOMAIN / <intent> with exactly one intent, as pseudo_dialogs() writes it; the intent
/// must be one of `label_names` (its index is the class id). File order is kept.
/// @throws DataError naming the file, the record (1-based, and its id) and what is wrong: a
///   missing or unreadable file, a file with no records, a record with no label, several
///   turns, domains or intents, or an intent not in label_names; SchemaError from the sts/1
///   reader.
IntentSplit read_pseudo_labels(const std::string& path,
                               const std::vector<std::string>& label_names);

/// What pseudo-labelling one task did.
struct PseudoLabelReport {
  std::string task;
  std::size_t labelled = 0;    ///< train_10 examples the classifier was fitted on
  std::size_t pool = 0;        ///< unlabelled utterances scored
  std::size_t kept = 0;        ///< records written
  int per_label = 0;           ///< PseudoLabelOptions::per_label
  double val_accuracy = 0;     ///< the classifier on val (fraction)
  /// The same selection rule on val, keeping the same share of val as of the pool (at least one
  /// per label): how often a kept label is right, the check that the pool's labels cannot give.
  double val_precision = 0;
  std::size_t val_kept = 0;
  double mean_confidence = 0;  ///< mean probability of the kept pool rows
  int iterations = 0;          ///< L-BFGS iterations of the fit
  bool converged = false;      ///< the fit met its tolerance before max_iter
  double seconds = 0;
  std::vector<sts::Dialog> records;  ///< the pseudo-labelled records (pseudo_dialogs())
  std::string file;                  ///< where the records were written ("" until then)
  /// Who labelled: "probe" (logistic regression on frozen vectors, pseudo_label_vectors()) or
  /// the fine-tuned bundle whose intent head did (pseudo_label_task_head()).
  std::string labeller = "probe";
  /// {"task", "labelled", "pool", "kept", "per_label", "val_accuracy", "val_precision",
  ///  "val_kept", "mean_confidence", "labeller", "iterations", "converged", "seconds"}, and
  ///  "file" when set (no records).
  nlohmann::json to_json() const;
};

/// The summary `dialtree eval pseudo-label` writes to pseudo_label.json: {"format":
/// "dialtree-pseudo-label/1", "model", "data_dir", "options" (to_json(options)), "tasks"
/// [report.to_json()...]}.
nlohmann::json pseudo_label_summary(const std::string& model, const std::string& data_dir,
                                    const PseudoLabelOptions& options,
                                    const std::vector<PseudoLabelReport>& reports);

/// The Markdown table of the reports: task, labeller, labelled, pool, kept, val accuracy, val
/// precision of the rule (with val_kept), mean confidence, file; percentages with 2 decimals.
std::string pseudo_label_table(const std::vector<PseudoLabelReport>& reports);

/// The confident-subset rule from class probabilities, whichever classifier gave them: every
/// pool row goes to its arg-max column and the `per_label` most confident per column are kept
/// (select_confident()); val is scored (arg-max accuracy) and checked with the same rule at the
/// pool's kept share. Column k of both matrices is class `classes[k]` (an index of label_names).
/// Fills every field but iterations, converged, seconds and file.
/// @throws std::invalid_argument if the matrices' rows do not match val_y / pool, or their
///   columns classes; as select_confident() / pseudo_dialogs().
PseudoLabelReport pseudo_label_probabilities(const std::string& task,
                                             const Eigen::MatrixXd& val_probabilities,
                                             const std::vector<int>& val_y,
                                             const Eigen::MatrixXd& pool_probabilities,
                                             const std::vector<int>& classes,
                                             const std::vector<std::string>& pool,
                                             const std::vector<std::string>& label_names,
                                             int per_label);

/// The confident-subset rule on a whole task, given its vectors: fits the probe's standardized
/// logistic regression on (labelled_x, labelled_y), scores val, selects from the pool. Torch-free
/// (the caller embeds). `label_names` maps class ids to names.
/// @throws as fit_logistic() / select_confident().
PseudoLabelReport pseudo_label_vectors(const std::string& task, const ProbeMatrix& labelled_x,
                                       const std::vector<int>& labelled_y,
                                       const ProbeMatrix& val_x, const std::vector<int>& val_y,
                                       const ProbeMatrix& pool_x,
                                       const std::vector<std::string>& pool,
                                       const std::vector<std::string>& label_names,
                                       const PseudoLabelOptions& options);

/// The texts of one DialoGLUE intent task that pseudo-labelling reads.
struct PseudoLabelData {
  std::string task;
  std::vector<std::string> label_names;  ///< class id -> intent (categories.json)
  IntentSplit labelled;                  ///< `<task>/train_10.csv`
  IntentSplit val;                       ///< `<task>/val.csv`
  std::vector<std::string> pool;         ///< unlabelled_pool() of train.csv's texts
};

/// Reads `<data_dir>/<task>/` (load_intent_task(); test.csv is read and checked too): train_10,
/// val, and the pool from train.csv, whose label column the CSV reader checks and this function
/// drops. Torch-free, so that a command can read every task before it loads a model.
/// @throws std::invalid_argument for a task that is not an intent task; DataError for bad data
///   files, naming the file: a train_10.csv with fewer than two intents, an empty val.csv.
PseudoLabelData load_pseudo_label_data(const std::string& data_dir, const std::string& task);

/// pseudo_label_vectors() on the data of one task with an in-memory model. Vectors as the
/// probe's (embed_texts(), [CLS], not normalised).
/// @throws std::invalid_argument for bad options; std::runtime_error naming the task if the
///   model's vectors are not finite.
PseudoLabelReport pseudo_label_task(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                                    const PseudoLabelData& data,
                                    const PseudoLabelOptions& options);

/// The teacher variant of pseudo_label_task(): `net` is a bundle fine-tuned on this task (`eval
/// dialoglue --save-models`) and its intent head labels the pool: the softmax of its logits on
/// the [CLS] vectors (eval mode, as embed_texts()). `head_labels` are the bundle's intent names
/// (class id -> name, BundleInfo::intent_labels); they must be the task's intents, in any order.
/// The report's labeller is `labeller`; iterations 0, converged true (nothing is fitted).
/// @throws std::invalid_argument for bad options or a head that does not match the task's
///   intents (naming the first that differs); std::runtime_error naming the task if the
///   probabilities are not finite.
PseudoLabelReport pseudo_label_task_head(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                                         const std::vector<std::string>& head_labels,
                                         const PseudoLabelData& data,
                                         const PseudoLabelOptions& options,
                                         const std::string& labeller);

}  // namespace dialtree::eval
