// SentencePiece tokenizer (unigram or BPE) and its trainer, built on the privately rebuilt
// SentencePiece 0.1.97 library (docs/build.md P3). SentencePiece headers stay out of this
// header, so torch-using code can include it freely.
//
// Vocabulary layout of every model trained here (docs/method.md §1.4 roles, own ids):
//   0 [PAD]   1 [UNK]   2 [CLS]   3 [SEP]   4 [MASK]   5 <sos_u>   6 <eos_u>   7 <sos_r>   8
//   <eos_r>
// There is no BOS/EOS. Ids 2..8 are control symbols: they are never produced from input text,
// so a user typing "[CLS]" gets ordinary sub-word pieces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace dialtree::data {

/// The special pieces of a dialtree SentencePiece model, in id order (ids 0..8).
inline constexpr std::array<const char*, 9> kSentencePieceSpecialPieces = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<sos_u>", "<eos_u>", "<sos_r>", "<eos_r>"};

/// The special ids of a dialtree SentencePiece model: pad=0, unk=1, cls=2, sep=3, mask=4,
/// sos_u=5, eos_u=6, sos_r=7, eos_r=8.
SpecialTokens sentencepiece_special_tokens();

/// Normalisation rules accepted for training: "nmt_nfkc" (default), "nmt_nfkc_cf" (plus
/// case folding = lower-casing), "nfkc", "nfkc_cf", "identity".
bool is_known_sentencepiece_normalization(std::string_view name);
/// True if the rule lower-cases (its name ends in "_cf").
bool sentencepiece_normalization_lower_cases(std::string_view name);

/// A loaded SentencePiece model. Immutable and thread-safe after construction. Special ids are
/// looked up by piece name in the model (see kSentencePieceSpecialPieces).
class SentencePieceTokenizer : public Tokenizer {
 public:
  /// Loads a `.model` file. @throws TokenizerError naming the path if the file cannot be read,
  ///   is not a SentencePiece model, or lacks one of the special pieces.
  explicit SentencePieceTokenizer(const std::string& model_path);
  /// Loads a model from its serialized ModelProto bytes; `origin` names it in error messages.
  /// @throws TokenizerError as the path constructor.
  static SentencePieceTokenizer from_serialized(std::string_view serialized,
                                                const std::string& origin);

  SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept;
  SentencePieceTokenizer& operator=(SentencePieceTokenizer&&) noexcept;
  ~SentencePieceTokenizer() override;

  /// Piece ids of `text` (no special token added). @throws TokenizerError on invalid UTF-8
  ///   (naming the byte offset) or a SentencePiece failure.
  std::vector<TokenSpan> encode_with_offsets(std::string_view text) const override;
  std::vector<std::int32_t> encode(std::string_view text) const override;
  /// Pieces of `text` ("▁"-prefixed word starts). @throws TokenizerError as encode().
  std::vector<std::string> tokenize(std::string_view text) const override;
  /// Detokenised text of `ids`; control ids decode to nothing, [UNK] to " ⁇ ".
  /// @throws TokenizerError naming the first id outside [0, vocab_size()) (checked before
  ///   SentencePiece sees the ids, docs/failure-cases.md C14).
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  std::int32_t vocab_size() const override;
  /// Id of the piece `token` (exact piece, e.g. "▁hello"), or -1 if absent.
  std::int32_t token_to_id(std::string_view token) const override;
  /// Piece of `id`. @throws TokenizerError if `id` is outside [0, vocab_size()).
  std::string id_to_token(std::int32_t id) const override;
  const SpecialTokens& special() const override { return special_; }
  /// Score of piece `id` as stored in the model (unigram: log probability; BPE: merge order).
  /// @throws TokenizerError if `id` is outside [0, vocab_size()).
  float score(std::int32_t id) const;
  std::string type() const override { return "sentencepiece"; }

  /// Name of the normalisation rule stored in the model ("nmt_nfkc", "nmt_nfkc_cf", ...;
  /// "user_defined" for a custom rule table, "" if the model does not record one).
  const std::string& normalization() const { return normalization_; }
  /// True if the model's normaliser lower-cases (rule name ends in "_cf").
  bool lower_case() const { return sentencepiece_normalization_lower_cases(normalization_); }
  /// The path or origin the model was loaded from.
  const std::string& origin() const { return origin_; }
  /// The serialized ModelProto (the exact bytes of a `.model` file).
  std::string serialized_model() const;

 private:
  SentencePieceTokenizer() = default;
  void init(std::string_view serialized);
  void check_id(std::int32_t id, const char* what) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string origin_;
  std::string normalization_;
  SpecialTokens special_{};
};

/// Accepted range of SentencePieceTrainOptions::vocab_size.
inline constexpr int kMinSentencePieceVocab = 16;
inline constexpr int kMaxSentencePieceVocab = 1 << 20;

/// Options of train_sentencepiece(). Defaults follow SentencePiece's except where noted.
struct SentencePieceTrainOptions {
  /// Plain-text corpora, one sentence per line (UTF-8; a trailing '\r' is dropped).
  std::vector<std::string> inputs;
  /// Output folder, written as a whole: created if missing, replaced if it exists (only on
  /// success, and only if it holds nothing but spm.model, spm.vocab and tokenizer.json).
  std::string out_dir;
  int vocab_size = 8000;               ///< pieces, the 9 special pieces included; [16, 2^20]
  std::string model_type = "unigram";  ///< "unigram" or "bpe"
  double character_coverage = 0.9995;  ///< fraction of characters covered, in [0.98, 1]
  int max_sentence_length =
      4192;  ///< bytes, >= 10; longer lines are skipped (docs/failure-cases.md C15)
  /// Training threads, in [1, max_sentencepiece_threads()] (results depend on this count).
  int num_threads = 1;
  /// Normalisation rule (see is_known_sentencepiece_normalization); "nmt_nfkc_cf" lower-cases.
  /// The nmt_* rules turn tabs, newlines and other control whitespace into spaces: a text is one
  /// utterance and never holds a newline token (docs/method.md §1.4).
  std::string normalization = "nmt_nfkc";
  /// SentencePiece's byte fallback: 256 pieces <0x00>..<0xFF> join the vocabulary, and a
  /// character outside it (an emoji, a rare accent) is encoded as its UTF-8 bytes instead of
  /// [UNK], so decode() gives it back. Off by default, as in SentencePiece; the vocabulary must
  /// then hold the 256 byte pieces too.
  bool byte_fallback = false;
  /// If > 0, train on a uniform random sample of this many usable lines, drawn with `seed`
  /// (in corpus order). 0 = use every usable line.
  std::size_t max_sentences = 0;
  /// Seed of the line sample. Training is otherwise deterministic: the same inputs, options
  /// and num_threads give a byte-identical model.
  std::uint64_t seed = 42;
  /// Let SentencePiece print its INFO log to stderr (off: warnings and errors only). This sets
  /// SentencePiece's process-wide log level.
  bool verbose = false;
};

/// What train_sentencepiece() read and wrote.
struct SentencePieceTrainResult {
  std::string model_path;          ///< <out_dir>/spm.model
  std::string vocab_path;          ///< <out_dir>/spm.vocab (piece TAB score per line)
  std::string config_path;         ///< <out_dir>/tokenizer.json
  std::size_t lines = 0;           ///< non-blank lines read
  std::size_t lines_too_long = 0;  ///< lines skipped: longer than max_sentence_length bytes
  std::size_t lines_reserved = 0;  ///< lines skipped: contain SentencePiece's reserved "▅"
  std::size_t lines_used = 0;      ///< lines given to the trainer (after sampling)
  std::int32_t vocab_size = 0;     ///< pieces in the trained model
};

/// The most training threads accepted: min(128, CPUs of this machine).
int max_sentencepiece_threads();

/// Checks `options` as train_sentencepiece() does first, with messages that name the CLI flags
/// of `dialtree tokenizer train`: inputs given, --out not empty, --vocab-size in [16, 2^20],
/// --model-type unigram|bpe, a known --normalization, --character-coverage in [0.98, 1] (NaN
/// rejected), --max-sentence-length >= 10, --threads in [1, max_sentencepiece_threads()].
/// @throws TokenizerError naming the flag and the accepted range.
void validate_sentencepiece_train_options(const SentencePieceTrainOptions& options);

/// Trains a SentencePiece model with the layout described at the top of this header and writes
/// spm.model, spm.vocab and tokenizer.json into `options.out_dir` as one unit: into a temporary
/// folder beside it (common/atomic_file.h AtomicDirectory), which then replaces `out_dir` in one
/// rename. On any failure `out_dir` is left as it was.
///
/// Order: the options are validated (validate_sentencepiece_train_options), then `out_dir` is
/// checked and the temporary folder created (an existing `out_dir` must be a folder holding only
/// a previous bundle; a place that cannot be written fails here, before any training), then the
/// inputs are scanned: blank lines (only whitespace, control or format characters) are ignored;
/// lines longer than max_sentence_length bytes are skipped and counted (spdlog warning with the
/// count). The summary is logged at debug level only; callers report the result.
/// @throws TokenizerError for invalid options, an unusable out_dir, if an input cannot be read
///   (naming it and the OS reason) or holds invalid UTF-8 (naming file and line), if no usable
///   line is left (e.g. "3 of 3 lines exceed max_sentence_length=4192 (set
///   --max-sentence-length)", docs/failure-cases.md C15), or when SentencePiece's trainer fails,
///   its message translated to dialtree's flags (e.g. "--vocab-size 5000 is too large for this
///   corpus: ...").
SentencePieceTrainResult train_sentencepiece(const SentencePieceTrainOptions& options);

}  // namespace dialtree::data
