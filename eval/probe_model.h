// The representation probe on a model (docs/evaluation.md, "Probe"): frozen [CLS] vectors of
// DialoGLUE intent utterances, scored by the torch-free protocols of eval/probe.h, and frozen
// word vectors of the tagging tasks, scored by the token-level probe of eval/tag_probe.h. Usable
// in-process (e.g. by a pretraining loop, with split "val" for model selection) or on a saved
// bundle. This header stays free of LibTorch: the model is only forward-declared.
#pragma once

#include <string>
#include <vector>

#include "eval/probe.h"
#include "eval/tag_probe.h"

namespace dialtree::model {
class SpaceModelImpl;
}
namespace dialtree::data {
class Tokenizer;
}

namespace dialtree::eval {

/// The frozen vector of each text, not normalised: the [CLS] state (SpaceModelImpl::forward_cls)
/// or, with ProbePooling::Mean, the mean of the utterance's token states (SpaceModelImpl::forward
/// rows 1.., padding excluded). Each text is serialised as intent fine-tuning serialises one user
/// utterance (eval/intent_inputs.h): [n, hidden_size], input order. Runs in eval mode under
/// torch::InferenceMode, in batches of `batch_size` texts sorted by length, under CPU bf16 autocast
/// when `bf16` (the caller checks the CPU: pass effective_bf16(), common/cpu_features.h), else in
/// fp32. The model's train/eval mode and the caller's autocast state are restored afterwards.
/// @throws std::invalid_argument if batch_size or max_utt_len < 1; TokenizerError from encode.
ProbeMatrix embed_texts(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                        const std::vector<std::string>& texts, int batch_size, int max_utt_len,
                        bool bf16 = false, ProbePooling pooling = ProbePooling::Cls);

/// The frozen vectors of tagging examples (eval/tag_probe.h WordVectors): each example's words
/// serialised as tagging fine-tuning serialises them (data/word_input.h encode_words, the last
/// max_utt_len sub-words), the final state of each word's first sub-word and of [CLS]. Batches,
/// modes and autocast as embed_texts(). @throws as embed_texts().
WordVectors embed_words(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                        const std::vector<TaggingExample>& examples, int batch_size,
                        int max_utt_len, bool bf16 = false);

/// Runs the probe's protocols on each of `tasks` (banking, clinc, hwu) with an in-memory model:
///  - dialoglue-few: LR (raw and standardized) and NCC fitted on `<task>/train_10.csv`, scored
///    on options.split (test.csv or val.csv);
///  - mteb: the same fitted on each of options.mteb_draws draws of options.mteb_per_label
///    examples per label from `<task>/train.csv` (mteb_draws()); only the drawn rows are
///    embedded.
/// Tagging tasks (restaurant8k, dstc8 or dstc8_sgd, top) get the token-level probe
/// (probe_tagging(): fitted on train_10's words, scored on options.split with DialoGLUE's metric
/// against gt_test.json when the data folder has it, else the test file's tags) in
/// report.tag_rows; the protocols apply to intent tasks only.
/// Each split is embedded once per task and shared by the protocols; options.bf16 is honoured
/// only where the CPU has native bf16 (report.options.bf16 says what was used), and
/// options.threads = 0 means LibTorch's thread count. `data_dir` is the DialoGLUE
/// folder (resolve_data_dir() resolves a user's choice). With options.dump_dir set, writes the
/// embeddings there (ProbeOptions::dump_dir). Returns the rows in task, then protocol order;
/// report.model is left empty.
/// @throws std::invalid_argument for a task that is neither an intent nor a tagging task, or
///   bad options (both before anything is embedded); DataError for bad data files; std::runtime_error on I/O
///   failure of the dump.
ProbeReport run_probe(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                      const std::string& data_dir, const std::vector<std::string>& tasks,
                      const ProbeOptions& options);

/// run_probe() on the bundle at `bundle_dir` (model/bundle.h; its own tokenizer), with
/// report.model = bundle_dir. @throws as run_probe(); DataError for an unreadable bundle.
ProbeReport run_probe(const std::string& bundle_dir, const std::string& data_dir,
                      const std::vector<std::string>& tasks, const ProbeOptions& options);

}  // namespace dialtree::eval
