// Frozen-embedding representation probe (docs/evaluation.md, "Probe"), torch-free: the
// classifiers, metrics and protocols that score a matrix of sentence embeddings without
// fine-tuning the encoder. Everything runs in double precision with Eigen and is deterministic.
// This header declares the protocols and includes the pieces they use, one subject a header:
//  - eval/lbfgs.h: our own L-BFGS;
//  - eval/logistic.h: multinomial logistic regression with L2, the objective of scikit-learn's
//    LogisticRegression(C, max_iter, solver="lbfgs"), and nearest class centroid on cosine;
//  - eval/probe_gemm.h: the matrix products of the logistic regression (AVX2 / AVX-512);
//  - eval/probe_metrics.h: accuracy, macro F1 (scikit-learn's f1_score(average="macro")),
//    effective rank (Roy & Vetterli 2007);
//  - eval/embedding_file.h: the embedding files of --dump-embeddings.
// The protocols: DialoGLUE few-shot (fit on train_10, score test or val) and MTEB's
// classification protocol (10 draws of 8 examples per label from train, seed 42).
// The torch side (embedding texts with a model, run_probe) is in eval/probe_model.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "eval/embedding_file.h"
#include "eval/lbfgs.h"
#include "eval/logistic.h"
#include "eval/metrics.h"  // MeanStd
#include "eval/probe_gemm.h"
#include "eval/probe_matrix.h"
#include "eval/probe_metrics.h"

namespace dialtree::eval {

/// The probe's protocols (docs/evaluation.md, "Probe").
enum class ProbeProtocol {
  DialoglueFew,  ///< "dialoglue-few": fit on the task's train_10, score test (or val)
  Mteb,          ///< "mteb": MTEB classification, 10 draws x 8 examples per label from train
};

/// "dialoglue-few" / "mteb" -> protocol. @throws std::invalid_argument naming the valid ones.
ProbeProtocol parse_probe_protocol(const std::string& name);
/// The protocol's name as parse_probe_protocol() reads it.
std::string probe_protocol_name(ProbeProtocol protocol);

/// Which final states make a text's vector (docs/evaluation.md, "Probe").
enum class ProbePooling {
  Cls,   ///< "cls": the [CLS] head vector's state, what `embed`, `serve` and fine-tuning use
  Mean,  ///< "mean": the mean of the utterance's token states (padding and [CLS] excluded),
         ///< sentence-transformers' default; tells whether the tokens carry what [CLS] lacks
};

/// "cls" / "mean" -> pooling. @throws std::invalid_argument naming the valid ones.
ProbePooling parse_probe_pooling(const std::string& name);
/// The pooling's name as parse_probe_pooling() reads it.
std::string probe_pooling_name(ProbePooling pooling);

/// The training rows of MTEB's classification protocol (MTEB's `undersample`): one index
/// permutation is shuffled again for each draw by one random stream seeded with `seed`, and
/// each draw keeps the first `per_label` indices of every label in that order (all of a label
/// with fewer). The stream is our own (SplitMix64 with Fisher-Yates shuffles), not numpy's, so
/// the draws are not MTEB's own but are drawn the same way. Returns `draws` sorted index lists.
/// @throws std::invalid_argument if draws or per_label < 1 or labels is empty.
std::vector<std::vector<std::size_t>> mteb_draws(const std::vector<int>& labels, int draws = 10,
                                                 int per_label = 8, std::uint64_t seed = 42);

/// The rows of `x` listed in `rows`, in that order. @throws std::out_of_range on a bad index.
ProbeMatrix select_rows(const ProbeMatrix& x, const std::vector<std::size_t>& rows);

/// What the probe runs (run_probe, probe_dialoglue_few, probe_mteb).
struct ProbeOptions {
  /// Protocols to run per task, in this order.
  std::vector<ProbeProtocol> protocols = {ProbeProtocol::DialoglueFew, ProbeProtocol::Mteb};
  std::string split = "test";                ///< scored split: "test", or "val" for model selection
  double C = 1.0;                            ///< LogisticRegression C (MTEB: 1)
  int max_iter = 100;                        ///< L-BFGS iterations (MTEB: 100)
  int batch_size = 128;                      ///< texts per forward pass when embedding
  ProbePooling pooling = ProbePooling::Cls;  ///< which final states make the vector
  /// Embed under CPU bf16 autocast where the CPU has native bf16 (avx512_bf16 / AMX), as intent
  /// fine-tuning does by default (configs/eval-*.yaml); fp32 otherwise or when false. About 5x
  /// faster on AMX; the vectors differ from fp32 ones by bf16 rounding.
  bool bf16 = true;
  int max_utt_len = 64;          ///< sub-words kept per utterance (as intent fine-tuning)
  int mteb_draws = 10;           ///< MTEB: draws (n_experiments)
  int mteb_per_label = 8;        ///< MTEB: training examples per label (samples_per_label)
  std::uint64_t mteb_seed = 42;  ///< MTEB: seed of mteb_draws()
  /// Threads for the fits (independent fits run side by side; the figures do not depend on
  /// it). 0: std::thread::hardware_concurrency(); run_probe() passes 0 as LibTorch's count.
  int threads = 0;
  /// When not empty, run_probe writes every embedded split there (write_embeddings()) as
  /// `<dir>/<task>/<split>.{json,f32}` plus, for mteb, `<dir>/<task>/mteb_draws.json`.
  std::string dump_dir;
  /// Bundle runs only: >= 0 re-initialises every weight (HF BERT initialisation, torch seed
  /// from_scratch_seed) before embedding: the no-pretraining baseline with the bundle's
  /// architecture and tokenizer, as `eval dialoglue --from-scratch`. -1 = the bundle's weights.
  std::int64_t from_scratch_seed = -1;
  /// Bundle runs only: where the bundle is embedded: auto, cpu, cuda or cuda:N
  /// (common/device_spec.h, docs/gpu.md). Runs on a given model keep the model's device.
  std::string device = "auto";
};

/// @throws std::invalid_argument naming the field: split not test/val, C <= 0, max_iter,
///   batch_size, max_utt_len, mteb_draws or mteb_per_label < 1, no protocol.
void check_probe_options(const ProbeOptions& options);


/// The figures of one task and protocol. Scores are fractions in [0, 1]; for mteb the mean and
/// sample std over the draws, for dialoglue-few one run (std 0).
struct ProbeRow {
  std::string task;
  ProbeProtocol protocol = ProbeProtocol::DialoglueFew;
  std::string split;               ///< scored split ("test" or "val")
  std::size_t train_examples = 0;  ///< training rows per run
  std::size_t eval_examples = 0;   ///< scored rows
  int runs = 0;                    ///< 1, or the number of MTEB draws
  int dim = 0;                     ///< embedding width
  MeanStd lr_accuracy;             ///< logistic regression on the raw vectors
  MeanStd lr_macro_f1;
  MeanStd lr_standardized_accuracy;  ///< logistic regression after a Standardizer
  MeanStd lr_standardized_macro_f1;
  MeanStd ncc_accuracy;  ///< nearest class centroid (cosine)
  MeanStd ncc_macro_f1;
  double effective_rank = 0;               ///< of the scored split's vectors
  int lr_max_iterations = 0;               ///< most L-BFGS iterations of a raw fit of the row
  int lr_standardized_max_iterations = 0;  ///< the same for the standardized fits
  bool lr_converged = true;                ///< every raw fit met gtol or ftol before max_iter
  bool lr_standardized_converged = true;   ///< every standardized fit did
  double embed_seconds = 0;                ///< embedding the texts this row was first to need
  double fit_seconds = 0;                  ///< fitting and scoring
};

/// JSON object of a row (scores as fractions; keys as the fields, protocol by name).
nlohmann::json to_json(const ProbeRow& row);

/// The figures of one tagging task (restaurant8k, dstc8, top) under the token-level probe
/// (docs/evaluation.md "Token-level probe"): a linear BIO tagger on the frozen state of each
/// word's first sub-word, fitted on train_10, and for TOP a linear intent classifier on [CLS],
/// scored with DialoGLUE's metric. Scores are fractions in [0, 1]; one run (the fits are
/// deterministic).
struct TagProbeRow {
  std::string task;                ///< DialoGLUE key: "restaurant8k", "dstc8" or "top"
  std::string split;               ///< scored split ("test" or "val")
  std::string metric;              ///< "slot F1" or "exact match" (eval/submission.h metric_name)
  std::size_t train_examples = 0;  ///< train_10 examples
  std::size_t train_words = 0;     ///< training rows of the tagger (words with a sub-word)
  std::size_t eval_examples = 0;   ///< scored examples
  int tag_classes = 0;             ///< distinct tags in the training words
  int dim = 0;                     ///< vector width
  double score = 0;                ///< DialoGLUE's metric of the scored split
  double tag_accuracy = 0;         ///< word-level tag accuracy over every scored word
  double intent_accuracy = -1;     ///< TOP: root-intent accuracy; -1 for slot tasks
  int lr_iterations = 0;           ///< most L-BFGS iterations of the row's fits
  bool lr_converged = true;        ///< every fit met gtol or ftol before max_iter
  double embed_seconds = 0;        ///< embedding the row's splits
  double fit_seconds = 0;          ///< fitting, predicting and scoring
};

/// JSON object of a tagging row (fields by name; intent_accuracy null for slot tasks).
nlohmann::json to_json(const TagProbeRow& row);

/// The result of a probe run.
struct ProbeReport {
  std::string model;     ///< bundle folder, or "" when run in-process
  std::string data_dir;  ///< DialoGLUE folder
  ProbeOptions options;
  std::vector<ProbeRow> rows;  ///< intent tasks: per task, per protocol, in the requested order
  std::vector<TagProbeRow> tag_rows;  ///< tagging tasks, in the requested order
  double seconds = 0;          ///< wall time of the whole run
  /// {"format": "dialtree-probe/1", model, data_dir, options {...}, seconds, rows [...],
  /// tag_rows [...]}.
  nlohmann::json to_json() const;
};

/// The Markdown table of a report: task, protocol, LR acc, LR-standardized acc, NCC acc,
/// macro F1 (of LR on raw vectors), effective rank, seconds; percentages with 2 decimals,
/// `mean ± std` for mteb; a footnote when an L-BFGS fit stopped at max_iter. Tagging rows get
/// a second table: task, metric, score, word tag accuracy, TOP intent accuracy, seconds. A table
/// without rows is left out.
std::string probe_table(const ProbeReport& report);

/// Scores of one training / scored split pair: LR raw, LR standardized, NCC (fractions).
struct SplitScores {
  double lr_accuracy = 0, lr_macro_f1 = 0;
  double lr_standardized_accuracy = 0, lr_standardized_macro_f1 = 0;
  double ncc_accuracy = 0, ncc_macro_f1 = 0;
  int lr_iterations = 0, lr_standardized_iterations = 0;  ///< L-BFGS iterations of each fit
  bool lr_converged = false, lr_standardized_converged = false;
};

/// Fits LR (raw and standardized, C and max_iter of `options`) and NCC on (train_x, train_y) and
/// scores (test_x, test_y), the three fits on up to options.threads threads.
/// @throws as fit_logistic().
SplitScores score_split(const ProbeMatrix& train_x, const std::vector<int>& train_y,
                        const ProbeMatrix& test_x, const std::vector<int>& test_y,
                        const ProbeOptions& options);

/// The dialoglue-few row: one score_split() of train (train_10) against the scored split, plus
/// the scored split's effective rank. Timings are left 0 except fit_seconds.
ProbeRow probe_dialoglue_few(const std::string& task, const ProbeMatrix& train_x,
                             const std::vector<int>& train_y, const ProbeMatrix& test_x,
                             const std::vector<int>& test_y, const ProbeOptions& options);

/// The mteb row: score_split() for each draw (rows of train_x, as mteb_draws() returns them),
/// mean and sample std over the draws, plus the scored split's effective rank (MTEB's protocol
/// itself reports LR on raw vectors: lr_accuracy and lr_macro_f1).
ProbeRow probe_mteb(const std::string& task, const ProbeMatrix& train_x,
                    const std::vector<int>& train_y,
                    const std::vector<std::vector<std::size_t>>& draws, const ProbeMatrix& test_x,
                    const std::vector<int>& test_y, const ProbeOptions& options);

}  // namespace dialtree::eval
