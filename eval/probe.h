// Frozen-embedding representation probe (docs/evaluation.md, "Probe"), torch-free: the
// classifiers, metrics and protocols that score a matrix of sentence embeddings without
// fine-tuning the encoder. Everything runs in double precision with Eigen and is deterministic.
//  - Multinomial logistic regression with L2, the objective of scikit-learn's
//    LogisticRegression(C, max_iter, solver="lbfgs"), minimised by our own L-BFGS.
//  - Nearest class centroid on cosine similarity.
//  - Accuracy, macro F1 (scikit-learn's f1_score(average="macro")), effective rank (Roy &
//    Vetterli 2007).
//  - Two protocols: DialoGLUE few-shot (fit on train_10, score test or val) and MTEB's
//    classification protocol (10 draws of 8 examples per label from train, seed 42).
// The torch side (embedding texts with a model, run_probe) is in eval/probe_model.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>

#include "eval/metrics.h"  // MeanStd

namespace dialtree::eval {

/// Embeddings of n examples, one per row: [n, d], double, row-major.
using ProbeMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---------------------------------------------------------------------------------------------
// L-BFGS

/// Settings of minimize_lbfgs(). The defaults are those scikit-learn 1.2 passes to SciPy's
/// L-BFGS-B for LogisticRegression(solver="lbfgs"): 10 correction pairs, gtol = tol = 1e-4 on
/// the largest absolute gradient entry, SciPy's default relative ftol 2.22e-9 (factr 1e7 times
/// the machine epsilon), at most 20 function evaluations per line search.
struct LbfgsOptions {
  int max_iter = 100;  ///< iterations (accepted steps); the search stops after this many
  int memory = 10;     ///< (s, y) correction pairs kept
  double gtol = 1e-4;  ///< converged when max_i |g_i| <= gtol
  double ftol =
      2.220446049250313e-9;  ///< converged when (f_old - f) / max(|f_old|, |f|, 1) <= ftol
  int max_linesearch = 20;   ///< function evaluations per line search
};

/// The outcome of minimize_lbfgs().
struct LbfgsResult {
  Eigen::VectorXd x;        ///< the last accepted point
  double f = 0;             ///< objective at x
  double grad_max_abs = 0;  ///< max_i |∂f/∂x_i| at x
  int iterations = 0;       ///< accepted steps
  int evaluations = 0;      ///< objective evaluations, line searches included
  bool converged = false;   ///< the gtol or ftol test passed (false: max_iter or a failed search)
  std::string stop_reason;  ///< "gtol", "ftol", "max_iter" or "line search failed"
};

/// An objective for minimize_lbfgs(): returns f(x) and writes ∇f(x) into `grad` (already sized
/// like x).
using LbfgsObjective = std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& grad)>;

/// Minimises a smooth function with limited-memory BFGS (Nocedal & Wright, Numerical
/// Optimization, 2nd ed., Alg. 7.4 two-loop recursion; line search Alg. 3.5/3.6 for the strong
/// Wolfe conditions with c1 = 1e-4, c2 = 0.9 and cubic interpolation). The first step has
/// length 1/‖∇f(x0)‖ as in L-BFGS-B; later steps start at 1. A pair with sᵀy <= 2.2e-16·yᵀy is
/// skipped; a failed line search restarts once from steepest descent, then stops.
/// Deterministic: the same inputs give the same bits.
/// @throws std::invalid_argument if options are not positive or f(x0) is not finite.
LbfgsResult minimize_lbfgs(const LbfgsObjective& f, const Eigen::VectorXd& x0,
                           const LbfgsOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Classifiers

/// scikit-learn's StandardScaler: per-column mean and population standard deviation (ddof 0)
/// fitted on the training rows; a constant column (variance within rounding of 0, scikit-learn's
/// test) gets scale 1.
struct Standardizer {
  Eigen::RowVectorXd mean;   ///< [d]
  Eigen::RowVectorXd scale;  ///< [d], > 0
  /// @throws std::invalid_argument if x has no rows.
  static Standardizer fit(const ProbeMatrix& x);
  /// (x - mean) / scale, row by row. @throws std::invalid_argument if the widths differ.
  ProbeMatrix transform(const ProbeMatrix& x) const;
};

/// Settings of fit_logistic(); names and defaults of scikit-learn's LogisticRegression.
struct LogisticOptions {
  double C = 1.0;            ///< inverse regularisation strength, > 0
  int max_iter = 100;        ///< L-BFGS iterations
  double tol = 1e-4;         ///< L-BFGS gtol
  bool standardize = false;  ///< fit a Standardizer on the training rows first
  /// Threads for the matrix products of a multinomial fit (three or more classes); the fitted
  /// model's bits do not depend on it. Pays off for large fits (the token probe's TOP tagger:
  /// about 30k rows x 260 classes).
  int threads = 1;
};

/// A fitted logistic regression. Two classes use scikit-learn's binary model (one weight row,
/// class `classes[1]` when w·x + b > 0); three or more the multinomial (softmax) model.
struct LogisticModel {
  std::vector<int> classes;   ///< the sorted distinct training labels
  Eigen::MatrixXd coef;       ///< [K, d] (K = 1 for two classes, else classes.size())
  Eigen::VectorXd intercept;  ///< [K]
  bool standardized = false;  ///< `scaler` applies before coef
  Standardizer scaler;        ///< fitted on the training rows when standardized
  int iterations = 0;         ///< L-BFGS iterations used
  int evaluations = 0;        ///< objective evaluations (line searches included)
  bool converged = false;     ///< L-BFGS met gtol or ftol before max_iter
  double grad_max_abs = 0;    ///< largest |gradient| entry of the objective at the solution
  double objective = 0;       ///< Σ_i CE_i + ‖W‖²/(2C) at the solution
};

/// L2-regularised logistic regression exactly as scikit-learn's LogisticRegression(C, max_iter,
/// solver="lbfgs") defines it (multi_class="auto"): it minimises C·Σ_i CE_i + ½‖W‖², the
/// intercept not penalised; optimised (as scikit-learn 1.2 does) in the equivalent form
/// Σ_i CE_i + ‖W‖²/(2C), so that the stopping rules mean the same. Starts from zero weights.
/// `x` [n, d]; `y` n labels (any ints; at least two distinct values).
/// @throws std::invalid_argument on mismatched sizes, fewer than two classes, C <= 0 or
///   max_iter < 1, or a non-finite input.
LogisticModel fit_logistic(const ProbeMatrix& x, const std::vector<int>& y,
                           const LogisticOptions& options = {});

/// Class scores [n, K] (the logits; for two classes one column, the decision function).
/// @throws std::invalid_argument if the width differs from the model's.
Eigen::MatrixXd decision_function(const LogisticModel& model, const ProbeMatrix& x);

/// Predicted label of each row of x (arg-max, the lowest class on ties).
/// @throws as decision_function().
std::vector<int> predict(const LogisticModel& model, const ProbeMatrix& x);

/// Nearest class centroid on cosine: each class's centroid is the mean of its L2-normalised
/// training rows, normalised again; a row goes to the centroid of highest cosine.
struct CentroidModel {
  std::vector<int> classes;  ///< sorted distinct training labels
  ProbeMatrix centroids;     ///< [K, d], unit rows (a zero row stays zero)
};

/// Fits the centroids. Zero rows are left unnormalised (they add nothing to a centroid).
/// @throws std::invalid_argument on mismatched sizes or no rows.
CentroidModel fit_centroids(const ProbeMatrix& x, const std::vector<int>& y);

/// Label of the centroid of highest cosine with each row (the lowest class on ties).
/// @throws std::invalid_argument if the width differs.
std::vector<int> predict(const CentroidModel& model, const ProbeMatrix& x);

// ---------------------------------------------------------------------------------------------
// Metrics

/// Fraction of positions where predicted == truth, in [0, 1].
/// @throws std::invalid_argument if the sizes differ or both are empty.
double probe_accuracy(const std::vector<int>& truth, const std::vector<int>& predicted);

/// scikit-learn's f1_score(truth, predicted, average="macro"): the unweighted mean over the
/// labels present in truth or predicted of F1 = 2·TP / (2·TP + FP + FN) (0 for a label never
/// predicted correctly), in [0, 1]. @throws as probe_accuracy().
double macro_f1(const std::vector<int>& truth, const std::vector<int>& predicted);

/// Effective rank (Roy & Vetterli, "The effective rank: a measure of effective
/// dimensionality", EUSIPCO 2007) of the rows of x after subtracting their mean:
/// exp(H(p)), H(p) = -Σ_k p_k ln p_k with p_k = σ_k / Σ_j σ_j over the singular values σ of the
/// centred [n, d] matrix. In [1, min(n - 1, d)]: d for an isotropic set, 1 for points on a
/// line. 0 when fewer than two rows or every row is the same.
double effective_rank(const ProbeMatrix& x);

// ---------------------------------------------------------------------------------------------
// Protocols

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

// ---------------------------------------------------------------------------------------------
// Embedding files (--dump-embeddings, bench/reference/probe.py, tests/fixtures/probe)

/// A matrix of embeddings with its labels, as write_embeddings() stores it.
struct EmbeddingFile {
  ProbeMatrix x;                         ///< [rows, dim]
  std::vector<int> labels;               ///< rows class ids
  std::vector<std::string> label_names;  ///< class id -> name (may be empty)
};

/// Writes `<stem>.f32` (rows x dim little-endian float32, row-major, nothing else) and
/// `<stem>.json` ({"format": "dialtree-embeddings/1", "rows", "dim", "dtype": "float32",
/// "byte_order": "little", "data": "<file name of the .f32>", "labels": [...], "label_names":
/// [...]} plus the members of `extra`), each atomically. numpy reads the matrix with
/// numpy.fromfile(path, dtype="<f4").reshape(rows, dim).
/// @throws std::invalid_argument if labels and rows differ in number; std::runtime_error on
///   I/O failure.
void write_embeddings(const std::string& stem, const ProbeMatrix& x, const std::vector<int>& labels,
                      const std::vector<std::string>& label_names, const nlohmann::json& extra);

/// Reads what write_embeddings() wrote at `stem`.
/// @throws DataError naming the file for a missing or malformed header or a data file of the
///   wrong size.
EmbeddingFile read_embeddings(const std::string& stem);

/// Internals exposed for tests.
namespace probe_detail {
/// The best matrix-product kernel this CPU runs: 4 (AVX-512), 3 (AVX2 + FMA) or 0 (Eigen).
int matmul_level();
/// C = L·R for row-major L [m, q], R [q, p8], C [m, p8] (p8 a multiple of 8) with the kernel of
/// `level`, or the best one below it that the CPU runs. The logistic regression's products.
void matmul_rr(int level, const double* l, std::ptrdiff_t m, std::ptrdiff_t q, const double* r,
               std::ptrdiff_t p8, double* c);
}  // namespace probe_detail

}  // namespace dialtree::eval
