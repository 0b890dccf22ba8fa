// `dialtree tokenizer train|encode|decode`.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/atomic_file.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer_factory.h"

namespace dialtree::cli {

namespace {

struct EncodeArgs {
  std::string model, text;
  bool pieces = false;
};

struct DecodeArgs {
  std::string model;
  std::vector<std::int32_t> ids;
};

namespace fs = std::filesystem;

// Refuses an --out that is, or contains, one of the training inputs: the bundle replaces the
// whole --out folder (std::invalid_argument, exit 2).
void check_out_is_not_an_input(const data::SentencePieceTrainOptions& t) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(fs::absolute(t.out_dir, ec), ec).lexically_normal();
  if (out.filename().empty() && out.has_relative_path()) out = out.parent_path();  // "tok/"
  for (const std::string& input : t.inputs) {
    refuse_overwriting_input("--out", t.out_dir, "--input", input);
    std::error_code ec2;
    const fs::path in = fs::weakly_canonical(fs::absolute(input, ec2), ec2);
    if (ec || ec2 || out.empty()) continue;
    const auto [o, i] = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
    if (o == out.end()) {
      throw std::invalid_argument("--input '" + input + "' lies inside --out '" + t.out_dir +
                                  "', which the bundle replaces; refusing to delete an input");
    }
  }
}

}  // namespace

void log_to_stderr(bool timestamps) {
  if (!spdlog::get("dialtree-stderr")) {
    auto logger = spdlog::stderr_color_mt("dialtree-stderr");
    logger->set_pattern(timestamps ? "[%Y-%m-%d %H:%M:%S.%e] [%l] %v" : "%l: %v");
    spdlog::set_default_logger(logger);
  }
}

void register_tokenizer(CLI::App& app) {
  CLI::App* tok = app.add_subcommand("tokenizer", "Train and apply tokenizers");
  tok->require_subcommand(1);

  auto t = std::make_shared<data::SentencePieceTrainOptions>();
  CLI::App* train = tok->add_subcommand("train", "Train a SentencePiece model (library API)");
  train->add_option("--input", t->inputs, "Text files, one sentence per line")->required();
  train
      ->add_option("--vocab-size", t->vocab_size,
                   "Pieces, the 9 special tokens included, in [16, 1048576]; at most what the "
                   "corpus supports")
      ->capture_default_str()
      ->check(CLI::Range(data::kMinSentencePieceVocab, data::kMaxSentencePieceVocab));
  add_out_option(train, t->out_dir, OutputKind::Folder,
                 "spm.model, spm.vocab, tokenizer.json; written as a whole on success; an "
                 "existing one is replaced and may hold only an earlier bundle");
  train->add_option("--model-type", t->model_type, "unigram or bpe")
      ->capture_default_str()
      ->check(CLI::IsMember({"unigram", "bpe"}));
  train
      ->add_option("--normalization", t->normalization,
                   "nmt_nfkc (cased) or nmt_nfkc_cf (lower-cased), identity, nfkc, nfkc_cf")
      ->capture_default_str();
  train->add_option("--character-coverage", t->character_coverage, "In [0.98, 1]")
      ->capture_default_str();
  train->add_flag("--byte-fallback", t->byte_fallback,
                  "Encode characters outside the vocabulary as their UTF-8 bytes (256 byte "
                  "pieces join the vocabulary) instead of [UNK]");
  train
      ->add_option("--max-sentence-length", t->max_sentence_length,
                   "Bytes; longer lines are skipped and counted")
      ->capture_default_str();
  train->add_option("--max-sentences", t->max_sentences, "Sample at most this many lines (0: all)")
      ->capture_default_str();
  train
      ->add_option("--threads", t->num_threads,
                   "Training threads, in [1, min(128, CPUs)]; the model depends on it")
      ->capture_default_str();
  train->add_option("--seed", t->seed, "Sampling seed")->capture_default_str();
  train->callback([t] {
    const auto t0 = std::chrono::steady_clock::now();
    data::validate_sentencepiece_train_options(*t);  // before anything is read or written
    check_out_is_not_an_input(*t);
    log_to_stderr();
    const data::SentencePieceTrainResult r = data::train_sentencepiece(*t);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(
        "trained {} pieces on {} of {} lines ({} too long, {} with reserved characters) "
        "in {:.1f} s -> {}\n",
        r.vocab_size, r.lines_used, r.lines, r.lines_too_long, r.lines_reserved, secs,
        r.model_path);
  });

  auto e = std::make_shared<EncodeArgs>();
  CLI::App* enc = tok->add_subcommand("encode", "Print the ids (and pieces) of a text");
  add_model_option(enc, e->model, ModelFolder::Tokenizer, "with tokenizer.json");
  enc->add_option("--text", e->text, "Text to encode")->required();
  enc->add_flag("--pieces", e->pieces, "Also print the pieces");
  enc->callback([e] {
    const auto tk = data::load_tokenizer(e->model);
    fmt::print("{}\n", fmt::join(tk->encode(e->text), " "));
    if (e->pieces) fmt::print("{}\n", fmt::join(tk->tokenize(e->text), " "));
  });

  auto d = std::make_shared<DecodeArgs>();
  CLI::App* dec = tok->add_subcommand("decode", "Print the text of a list of ids");
  add_model_option(dec, d->model, ModelFolder::Tokenizer, "with tokenizer.json");
  dec->add_option("ids", d->ids, "Token ids")->required();
  dec->callback([d] {
    const auto tk = data::load_tokenizer(d->model);
    fmt::print("{}\n", tk->decode(d->ids));
  });
}

}  // namespace dialtree::cli
