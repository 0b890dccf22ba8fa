// `dialtree tokenizer train|encode|decode`.
#include <chrono>
#include <memory>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
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

}  // namespace

void register_tokenizer(CLI::App& app) {
  CLI::App* tok = app.add_subcommand("tokenizer", "Train and apply tokenizers");
  tok->require_subcommand(1);

  auto t = std::make_shared<data::SentencePieceTrainOptions>();
  CLI::App* train = tok->add_subcommand("train", "Train a SentencePiece model (library API)");
  train->add_option("--input", t->inputs, "Text files, one sentence per line")
      ->required()
      ->check(CLI::ExistingFile);
  train->add_option("--vocab-size", t->vocab_size, "Pieces, the 9 special tokens included")
      ->check(CLI::Range(16, 1 << 20));
  train->add_option("--out", t->out_dir, "Output directory (spm.model, spm.vocab, tokenizer.json)")
      ->required();
  train->add_option("--model-type", t->model_type, "unigram or bpe")
      ->check(CLI::IsMember({"unigram", "bpe"}));
  train->add_option("--normalization", t->normalization,
                    "nmt_nfkc (cased) or nmt_nfkc_cf (lower-cased), identity, nfkc, nfkc_cf");
  train->add_option("--character-coverage", t->character_coverage, "In [0.98, 1]");
  train->add_option("--max-sentence-length", t->max_sentence_length,
                    "Bytes; longer lines are skipped and counted");
  train->add_option("--max-sentences", t->max_sentences, "Sample at most this many lines (0: all)");
  train->add_option("--threads", t->num_threads, "Training threads");
  train->add_option("--seed", t->seed, "Sampling seed");
  train->callback([t] {
    const auto t0 = std::chrono::steady_clock::now();
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
  enc->add_option("--model", e->model, "Tokenizer directory (with tokenizer.json)")->required();
  enc->add_option("--text", e->text, "Text to encode")->required();
  enc->add_flag("--pieces", e->pieces, "Also print the pieces");
  enc->callback([e] {
    const auto tk = data::load_tokenizer(e->model);
    fmt::print("{}\n", fmt::join(tk->encode(e->text), " "));
    if (e->pieces) fmt::print("{}\n", fmt::join(tk->tokenize(e->text), " "));
  });

  auto d = std::make_shared<DecodeArgs>();
  CLI::App* dec = tok->add_subcommand("decode", "Print the text of a list of ids");
  dec->add_option("--model", d->model, "Tokenizer directory (with tokenizer.json)")->required();
  dec->add_option("ids", d->ids, "Token ids")->required();
  dec->callback([d] {
    const auto tk = data::load_tokenizer(d->model);
    fmt::print("{}\n", tk->decode(d->ids));
  });
}

}  // namespace dialtree::cli
