#include "data/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>
#include <utf8proc.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/input_file.h"
#include "common/utf8.h"
#include "data/tokenizer_factory.h"

namespace dialtree::data {

// SentencePiece takes std::vector<int>; our ids are int32_t. They are the same type here, so
// id vectors pass through without copies.
static_assert(std::is_same_v<int, std::int32_t>, "SentencePiece ids are int");

namespace {

constexpr std::array<const char*, 5> kNormalizations = {"nmt_nfkc", "nmt_nfkc_cf", "nfkc",
                                                        "nfkc_cf", "identity"};
/// SentencePiece skips training lines holding this reserved character (U+2585).
constexpr std::string_view kSpmReservedChar = "\xe2\x96\x85";

// ---- Minimal protobuf wire-format reading: ModelProto.normalizer_spec(3).name(1). ----------

bool read_varint(std::string_view s, std::size_t& pos, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && pos < s.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(s[pos++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

/// Calls fn(field, bytes) for every length-delimited field of the message `s`; returns false
/// on malformed input.
template <typename Fn>
bool for_each_bytes_field(std::string_view s, Fn&& fn) {
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::uint64_t key = 0, v = 0;
    if (!read_varint(s, pos, key)) return false;
    switch (key & 7) {
      case 0:
        if (!read_varint(s, pos, v)) return false;
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case 2:
        if (!read_varint(s, pos, v) || v > s.size() - pos) return false;
        fn(key >> 3, s.substr(pos, v));
        pos += v;
        break;
      default:
        return false;
    }
    if (pos > s.size()) return false;
  }
  return true;
}

std::string normalizer_name(std::string_view model_proto) {
  std::string name;
  for_each_bytes_field(model_proto, [&](std::uint64_t field, std::string_view spec) {
    if (field != 3) return;  // ModelProto.normalizer_spec
    for_each_bytes_field(spec, [&](std::uint64_t f, std::string_view bytes) {
      if (f == 1) name = std::string(bytes);  // NormalizerSpec.name
    });
  });
  return name;
}

std::string read_binary_file(const std::string& path) {
  std::ifstream in;
  if (const int err = open_input_file(in, path); err != 0) {
    throw TokenizerError("cannot open SentencePiece model '" + path + "': " +
                         (err == EISDIR ? "is a directory, not a file" : std::strerror(err)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    throw TokenizerError("read error on SentencePiece model '" + path +
                         "': " + std::strerror(errno));
  }
  return ss.str();
}

/// True if valid UTF-8 `line` holds only whitespace, control and format characters, which
/// SentencePiece's normaliser removes: such a line would reach its trainer as an empty sentence,
/// and a corpus of only such lines aborts it (unigram_model_trainer.cc CHECK).
bool is_blank(std::string_view line) {
  bool non_ascii = false;
  for (char c : line) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x80) {
      non_ascii = true;
    } else if (b > 0x20 && b != 0x7f) {
      return false;
    }
  }
  if (!non_ascii) return true;
  for (char32_t cp : utf8::decode(line)) {
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
      case UTF8PROC_CATEGORY_CC:
      case UTF8PROC_CATEGORY_CF:
      case UTF8PROC_CATEGORY_ZS:
      case UTF8PROC_CATEGORY_ZL:
      case UTF8PROC_CATEGORY_ZP:
        break;
      default:
        return false;
    }
  }
  return true;
}

void check_utf8(std::string_view text) {
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != std::string_view::npos) {
    throw TokenizerError("invalid UTF-8 in tokenizer input at byte " + std::to_string(bad));
  }
}

}  // namespace

SpecialTokens sentencepiece_special_tokens() {
  SpecialTokens s;
  s.pad = 0;
  s.unk = 1;
  s.cls = 2;
  s.sep = 3;
  s.mask = 4;
  s.sos_u = 5;
  s.eos_u = 6;
  s.sos_r = 7;
  s.eos_r = 8;
  return s;
}

bool is_known_sentencepiece_normalization(std::string_view name) {
  return std::find(kNormalizations.begin(), kNormalizations.end(), name) != kNormalizations.end();
}

bool sentencepiece_normalization_lower_cases(std::string_view name) {
  return name.size() >= 3 && name.substr(name.size() - 3) == "_cf";
}

// ---- SentencePieceTokenizer ---------------------------------------------------------------

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path) {
  origin_ = model_path;
  init(read_binary_file(model_path));
}

SentencePieceTokenizer SentencePieceTokenizer::from_serialized(std::string_view serialized,
                                                               const std::string& origin) {
  SentencePieceTokenizer tok;
  tok.origin_ = origin;
  tok.init(serialized);
  return tok;
}

SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept = default;
SentencePieceTokenizer& SentencePieceTokenizer::operator=(SentencePieceTokenizer&&) noexcept =
    default;
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

void SentencePieceTokenizer::init(std::string_view serialized) {
  sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp_->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    throw TokenizerError("'" + origin_ + "' is not a SentencePiece model: " + status.ToString());
  }
  normalization_ = normalizer_name(serialized);

  std::array<std::int32_t, kSentencePieceSpecialPieces.size()> ids{};
  for (std::size_t k = 0; k < kSentencePieceSpecialPieces.size(); ++k) {
    const char* piece = kSentencePieceSpecialPieces[k];
    const int id = sp_->PieceToId(piece);
    const bool found = id >= 0 && id < sp_->GetPieceSize() && sp_->IdToPiece(id) == piece;
    if (!found) {
      throw TokenizerError("SentencePiece model '" + origin_ + "' lacks the special piece " +
                           piece + " (train it with dialtree's train_sentencepiece)");
    }
    // [UNK] is the unknown piece; every other special piece must be a control symbol, so that
    // it can never be produced from input text.
    const bool right_type = k == 1 ? sp_->IsUnknown(id) : sp_->IsControl(id);
    if (!right_type) {
      throw TokenizerError("SentencePiece model '" + origin_ + "': special piece " + piece +
                           " (id " + std::to_string(id) + ") is not a " +
                           (k == 1 ? "unknown" : "control") + " symbol");
    }
    ids[k] = id;
  }
  special_.pad = ids[0];
  special_.unk = ids[1];
  special_.cls = ids[2];
  special_.sep = ids[3];
  special_.mask = ids[4];
  special_.sos_u = ids[5];
  special_.eos_u = ids[6];
  special_.sos_r = ids[7];
  special_.eos_r = ids[8];
}

std::vector<std::int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  check_utf8(text);
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw TokenizerError("SentencePiece encode failed: " + status.ToString());
  return ids;
}

std::vector<TokenSpan> SentencePieceTokenizer::encode_with_offsets(std::string_view text) const {
  check_utf8(text);
  sentencepiece::ImmutableSentencePieceText spt;
  const auto status = sp_->Encode(text, spt.mutable_proto());
  if (!status.ok()) throw TokenizerError("SentencePiece encode failed: " + status.ToString());
  std::vector<TokenSpan> out;
  out.reserve(spt.pieces_size());
  // begin/end are byte offsets into the original input (SentencePiece's "surface"). A word-start
  // piece ("▁word") has the whitespace its "▁" stands for in its surface; like Hugging Face's
  // offsets, ours start at the word. Only that whitespace is trimmed: a byte piece of a newline
  // or tab (<0x0A>, byte fallback) or a lone "▁" covers its own characters.
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"
  for (const auto& piece : spt.pieces()) {
    std::size_t begin = piece.begin();
    const std::size_t end = piece.end();
    const std::string_view p = piece.piece();
    if (p.size() > kSpace.size() && p.substr(0, kSpace.size()) == kSpace) {
      while (begin < end && (text[begin] == ' ' || text[begin] == '\t' || text[begin] == '\n' ||
                             text[begin] == '\r')) {
        ++begin;
      }
    }
    out.push_back({static_cast<std::int32_t>(piece.id()), begin, end});
  }
  return out;
}

std::vector<std::string> SentencePieceTokenizer::tokenize(std::string_view text) const {
  check_utf8(text);
  std::vector<std::string> pieces;
  const auto status = sp_->Encode(text, &pieces);
  if (!status.ok()) throw TokenizerError("SentencePiece encode failed: " + status.ToString());
  return pieces;
}

void SentencePieceTokenizer::check_id(std::int32_t id, const char* what) const {
  if (id < 0 || id >= sp_->GetPieceSize()) {
    throw TokenizerError(std::string(what) + ": id " + std::to_string(id) +
                         " is outside the vocabulary [0, " + std::to_string(sp_->GetPieceSize()) +
                         ")");
  }
}

std::string SentencePieceTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  for (std::int32_t id : ids) check_id(id, "decode");
  std::string text;
  const auto status = sp_->Decode(ids, &text);
  if (!status.ok()) throw TokenizerError("SentencePiece decode failed: " + status.ToString());
  return text;
}

std::int32_t SentencePieceTokenizer::vocab_size() const {
  return sp_->GetPieceSize();
}

std::int32_t SentencePieceTokenizer::token_to_id(std::string_view token) const {
  const int id = sp_->PieceToId(token);
  if (id < 0 || id >= sp_->GetPieceSize() || sp_->IdToPiece(id) != token) return -1;
  return id;
}

std::string SentencePieceTokenizer::id_to_token(std::int32_t id) const {
  check_id(id, "id_to_token");
  return sp_->IdToPiece(id);
}

float SentencePieceTokenizer::score(std::int32_t id) const {
  check_id(id, "score");
  return sp_->GetScore(id);
}

std::string SentencePieceTokenizer::serialized_model() const {
  const auto bytes = sp_->serialized_model_proto();
  return std::string(bytes.data(), bytes.size());
}

// ---- Training -------------------------------------------------------------------------------

namespace {

/// Streams the non-blank lines (see is_blank) of several files, trailing '\r' dropped, and
/// classifies each.
class CorpusReader {
 public:
  enum class Kind { kUsable, kTooLong, kReserved };

  CorpusReader(const std::vector<std::string>& files, std::size_t max_bytes)
      : files_(files), max_bytes_(max_bytes) {}

  /// Advances to the next non-blank line; false at the end.
  /// @throws TokenizerError on an unreadable file or invalid UTF-8.
  bool next() {
    for (;;) {
      if (!in_.is_open()) {
        if (file_ >= files_.size()) return false;
        if (const int err = open_input_file(in_, files_[file_]); err != 0) {
          throw TokenizerError("cannot open training input '" + files_[file_] + "': " +
                               (err == EISDIR ? "is a directory, not a file" : std::strerror(err)));
        }
        line_no_ = 0;
      }
      if (!std::getline(in_, line_)) {
        if (in_.bad()) {
          throw TokenizerError("read error on training input '" + files_[file_] + "' after " +
                               at_line(line_no_) + ": " + std::strerror(errno));
        }
        in_.close();
        ++file_;
        continue;
      }
      ++line_no_;
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      const std::size_t bad = utf8::first_invalid(line_);
      if (bad != std::string::npos) {
        throw TokenizerError("training input '" + files_[file_] + "': " + at_line(line_no_) +
                             ": invalid UTF-8 at byte " + std::to_string(bad));
      }
      if (is_blank(line_)) continue;
      return true;
    }
  }

  const std::string& line() const { return line_; }
  Kind kind() const {
    if (line_.size() > max_bytes_) return Kind::kTooLong;
    if (line_.find(kSpmReservedChar) != std::string::npos) return Kind::kReserved;
    return Kind::kUsable;
  }

 private:
  const std::vector<std::string>& files_;
  std::size_t max_bytes_;
  std::size_t file_ = 0;
  std::size_t line_no_ = 0;
  std::ifstream in_;
  std::string line_;
};

/// Feeds SentencePiece the usable lines, or a uniform sample of `want` of the `total` usable
/// lines (Knuth's selection sampling, corpus order kept). Exceptions never cross into
/// SentencePiece: a failure ends the iteration and is reported through status() and error().
class SampledIterator : public sentencepiece::SentenceIterator {
 public:
  SampledIterator(const std::vector<std::string>& files, std::size_t max_bytes, std::size_t total,
                  std::size_t want, std::uint64_t seed)
      : reader_(files, max_bytes), total_(total), want_(std::min(want, total)), rng_(seed) {
    Next();
  }

  bool done() const override { return done_; }
  const std::string& value() const override { return reader_.line(); }
  sentencepiece::util::Status status() const override {
    if (error_.empty()) return sentencepiece::util::Status();
    return sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, error_);
  }
  void Next() override {
    try {
      while (!done_ && reader_.next()) {
        if (reader_.kind() != CorpusReader::Kind::kUsable) continue;
        if (seen_ >= total_) break;  // the corpus grew since the scan: ignore the new lines
        const std::size_t seen = seen_++;
        if (want_ == total_ || rng_() % (total_ - seen) < want_ - taken_) {
          ++taken_;
          return;
        }
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    done_ = true;
  }

  std::size_t taken() const { return taken_; }
  const std::string& error() const { return error_; }

 private:
  CorpusReader reader_;
  std::size_t total_, want_;
  std::mt19937_64 rng_;
  std::size_t seen_ = 0, taken_ = 0;
  bool done_ = false;
  std::string error_;
};

std::string join_inputs(const std::vector<std::string>& files) {
  std::string s;
  for (const auto& f : files) s += (s.empty() ? "" : ", ") + f;
  return s;
}

/// The files a bundle folder holds; an existing --out may hold nothing else.
constexpr std::array<const char*, 3> kBundleFiles = {"spm.model", "spm.vocab",
                                                     kTokenizerConfigFile};

/// An existing `dir` is replaced as a whole: refuse one that holds anything but a bundle.
void check_replaceable_bundle(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;  // absent (or not a folder: see below)
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(kBundleFiles.begin(), kBundleFiles.end(), name) == kBundleFiles.end()) {
      throw TokenizerError("--out '" + dir + "' already exists and holds " +
                           quote_for_message(name) +
                           ", which is not part of a tokenizer bundle; the bundle replaces the "
                           "whole folder, so choose a new or empty folder (or an earlier bundle)");
    }
  }
  if (ec) throw TokenizerError("cannot list --out '" + dir + "': " + ec.message());
}

/// SentencePiece's trainer messages in terms of dialtree's own flags.
std::string explain_trainer_error(const std::string& message,
                                  const SentencePieceTrainOptions& options) {
  std::smatch m;
  static const std::regex kTooHigh(
      R"(Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)\.)");
  static const std::regex kTooSmall(
      R"(Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)\.)");
  if (std::regex_search(message, m, kTooHigh)) {
    return "--vocab-size " + m[1].str() + " is too large for this corpus: SentencePiece can make " +
           "at most " + m[2].str() + " pieces from it; set --vocab-size " + m[2].str() +
           " or less, or train on more text (SentencePiece: " + message + ")";
  }
  if (std::regex_search(message, m, kTooSmall)) {
    std::ostringstream coverage;
    coverage << options.character_coverage;
    return "--vocab-size " + m[1].str() + " is smaller than the " + m[2].str() +
           " pieces needed for the characters that --character-coverage " + coverage.str() +
           " keeps (special pieces" +
           (options.byte_fallback ? " and the 256 byte pieces of --byte-fallback" : "") +
           " included); raise --vocab-size to at least " + m[2].str() +
           " or lower --character-coverage (SentencePiece: " + message + ")";
  }
  // Anything else: at least spell SentencePiece's flag names as dialtree's.
  std::string out =
      std::regex_replace(message, std::regex("--character_coverage"), "--character-coverage");
  out = std::regex_replace(out, std::regex("(^|[^-_a-z])vocab_size"), "$1--vocab-size");
  return out;
}

}  // namespace

int max_sentencepiece_threads() {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::min(128u, cpus));
}

void validate_sentencepiece_train_options(const SentencePieceTrainOptions& options) {
  if (options.inputs.empty()) throw TokenizerError("no training input given (--input)");
  if (options.out_dir.empty()) throw TokenizerError("--out must not be empty");
  if (options.vocab_size < kMinSentencePieceVocab || options.vocab_size > kMaxSentencePieceVocab) {
    throw TokenizerError("--vocab-size " + std::to_string(options.vocab_size) + " must be in [" +
                         std::to_string(kMinSentencePieceVocab) + ", " +
                         std::to_string(kMaxSentencePieceVocab) + "]");
  }
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw TokenizerError("--model-type must be \"unigram\" or \"bpe\", got " +
                         quote_for_message(options.model_type));
  }
  if (!is_known_sentencepiece_normalization(options.normalization)) {
    throw TokenizerError("--normalization " + quote_for_message(options.normalization) +
                         " is unknown (use nmt_nfkc, nmt_nfkc_cf, nfkc, nfkc_cf or identity)");
  }
  // Written so that NaN fails too.
  if (!(options.character_coverage >= 0.98 && options.character_coverage <= 1.0)) {
    std::ostringstream v;
    v << options.character_coverage;
    throw TokenizerError("--character-coverage " + v.str() + " must be in [0.98, 1]");
  }
  if (options.max_sentence_length < 10) {
    throw TokenizerError("--max-sentence-length " + std::to_string(options.max_sentence_length) +
                         " must be >= 10");
  }
  const int max_threads = max_sentencepiece_threads();
  if (options.num_threads < 1 || options.num_threads > max_threads) {
    throw TokenizerError("--threads " + std::to_string(options.num_threads) + " must be in [1, " +
                         std::to_string(max_threads) + "] (the CPUs of this machine, at most 128)");
  }
}

namespace {

// Phase 1: counts the corpus's lines by kind before training (docs/failure-cases.md C15:
// SentencePiece aborts when nothing is left), warns about skipped lines, and returns the number of
// usable lines. @throws TokenizerError when no line is usable.
std::size_t scan_corpus(const SentencePieceTrainOptions& options, const std::string& inputs,
                        SentencePieceTrainResult& result) {
  const auto max_bytes = static_cast<std::size_t>(options.max_sentence_length);
  std::size_t usable = 0;
  {
    CorpusReader reader(options.inputs, max_bytes);
    while (reader.next()) {
      ++result.lines;
      switch (reader.kind()) {
        case CorpusReader::Kind::kUsable:
          ++usable;
          break;
        case CorpusReader::Kind::kTooLong:
          ++result.lines_too_long;
          break;
        case CorpusReader::Kind::kReserved:
          ++result.lines_reserved;
          break;
      }
    }
  }
  if (result.lines == 0) {
    throw TokenizerError("train_sentencepiece: no non-blank lines in " + inputs +
                         "; nothing to train on");
  }
  if (result.lines_too_long == result.lines) {
    throw TokenizerError(
        std::to_string(result.lines_too_long) + " of " + std::to_string(result.lines) +
        " lines exceed max_sentence_length=" + std::to_string(options.max_sentence_length) +
        " (set --max-sentence-length); nothing left to train on in " + inputs);
  }
  if (usable == 0) {
    throw TokenizerError(
        "train_sentencepiece: no usable line in " + inputs + ": " +
        std::to_string(result.lines_too_long) +
        " exceed max_sentence_length=" + std::to_string(options.max_sentence_length) + ", " +
        std::to_string(result.lines_reserved) + " contain the reserved character U+2585");
  }
  if (result.lines_too_long > 0) {
    spdlog::warn(
        "train_sentencepiece: skipping {} of {} lines longer than max_sentence_length={} bytes "
        "(set --max-sentence-length to keep them)",
        result.lines_too_long, result.lines, options.max_sentence_length);
  }
  if (result.lines_reserved > 0) {
    spdlog::warn(
        "train_sentencepiece: skipping {} lines that contain U+2585, reserved by "
        "SentencePiece",
        result.lines_reserved);
  }

  return usable;
}

// Phase 2: SentencePiece's trainer settings: the options, pad 0 and unk 1, then our control
// symbols at the next ids, no bos/eos.
std::unordered_map<std::string, std::string> trainer_kwargs(
    const SentencePieceTrainOptions& options) {
  std::string specials;
  for (std::size_t k = 2; k < kSentencePieceSpecialPieces.size(); ++k) {
    specials += (specials.empty() ? "" : ",") + std::string(kSentencePieceSpecialPieces[k]);
  }
  std::ostringstream coverage;
  coverage << options.character_coverage;
  return {
      {"vocab_size", std::to_string(options.vocab_size)},
      {"model_type", options.model_type},
      {"character_coverage", coverage.str()},
      {"max_sentence_length", std::to_string(options.max_sentence_length)},
      {"num_threads", std::to_string(options.num_threads)},
      {"normalization_rule_name", options.normalization},
      {"byte_fallback", options.byte_fallback ? "true" : "false"},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_piece", kSentencePieceSpecialPieces[0]},
      {"unk_piece", kSentencePieceSpecialPieces[1]},
      {"control_symbols", specials},
      {"input_sentence_size", "0"},
      {"minloglevel", options.verbose ? "0" : "1"},
  };
}

// Phase 3: the trained model's special pieces sit at their fixed ids.
// @throws TokenizerError naming the misplaced piece.
void check_special_ids(const SentencePieceTokenizer& tok) {
  for (std::size_t k = 0; k < kSentencePieceSpecialPieces.size(); ++k) {
    if (tok.token_to_id(kSentencePieceSpecialPieces[k]) != static_cast<std::int32_t>(k)) {
      throw TokenizerError(std::string("train_sentencepiece: trained model has ") +
                           kSentencePieceSpecialPieces[k] + " at id " +
                           std::to_string(tok.token_to_id(kSentencePieceSpecialPieces[k])) +
                           ", expected " + std::to_string(k));
    }
  }
}

// Phase 4: spm.model, spm.vocab and tokenizer_config.json into the bundle's temporary folder,
// then the folder swapped in as a whole.
void write_sentencepiece_bundle(AtomicDirectory& bundle, const std::string& serialized,
                                const SentencePieceTokenizer& tok,
                                const SentencePieceTrainOptions& options) {
  write_file_atomic(bundle.file("spm.model"), serialized);
  {
    AtomicFile vocab(bundle.file("spm.vocab"));
    for (std::int32_t id = 0; id < tok.vocab_size(); ++id) {
      vocab.stream() << tok.id_to_token(id) << '\t' << tok.score(id) << '\n';
    }
    vocab.commit();
  }
  TokenizerConfig config;
  config.type = "sentencepiece";
  config.model_file = "spm.model";
  config.lower_case = sentencepiece_normalization_lower_cases(options.normalization);
  config.normalization = options.normalization;
  config.special = sentencepiece_special_tokens();
  bundle.file(kTokenizerConfigFile);  // registers it for removal on a signal
  write_tokenizer_config(bundle.temp_path().string(), config);
  bundle.commit();
}

}  // namespace

SentencePieceTrainResult train_sentencepiece(const SentencePieceTrainOptions& options) {
  validate_sentencepiece_train_options(options);
  const auto max_bytes = static_cast<std::size_t>(options.max_sentence_length);
  const std::string inputs = join_inputs(options.inputs);

  // Fail fast on an unusable --out, before the corpus is read: the bundle is written into a
  // temporary folder beside it and swapped in as a whole on success.
  check_replaceable_bundle(options.out_dir);
  std::optional<AtomicDirectory> bundle;
  try {
    bundle.emplace(options.out_dir);
  } catch (const std::exception& e) {
    throw TokenizerError(std::string("cannot write the bundle to --out: ") + e.what());
  }

  SentencePieceTrainResult result;
  const std::size_t usable = scan_corpus(options, inputs, result);

  const std::unordered_map<std::string, std::string> kwargs = trainer_kwargs(options);
  SampledIterator it(options.inputs, max_bytes, usable,
                     options.max_sentences > 0 ? options.max_sentences : usable, options.seed);
  std::string serialized;
  const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &it, &serialized);
  if (!it.error().empty()) throw TokenizerError("train_sentencepiece: " + it.error());
  if (!status.ok()) {
    throw TokenizerError("SentencePiece training on " + inputs +
                         " failed: " + explain_trainer_error(status.ToString(), options));
  }
  result.lines_used = it.taken();

  const std::filesystem::path dir(options.out_dir);
  result.model_path = (dir / "spm.model").string();
  result.vocab_path = (dir / "spm.vocab").string();
  result.config_path = (dir / kTokenizerConfigFile).string();

  const SentencePieceTokenizer tok = SentencePieceTokenizer::from_serialized(serialized, inputs);
  check_special_ids(tok);
  result.vocab_size = tok.vocab_size();

  write_sentencepiece_bundle(*bundle, serialized, tok, options);

  // The caller reports the result; the library only logs it for debugging.
  spdlog::debug("train_sentencepiece: {} pieces from {} of {} lines -> {}", result.vocab_size,
                result.lines_used, result.lines, options.out_dir);
  return result;
}

}  // namespace dialtree::data
