// Regression tests for the tester's report on the tokenizers: WordPiece vocabularies whose
// casing contradicts tokenizer.json (C17), tokenizer.json keys and paths, `tokenizer train`
// option checks with dialtree's flag names, the bundle written as one unit, and I/O errors that
// say why.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer_factory.h"
#include "data/wordpiece.h"
#include "expect_error.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using dialtree::testing::bert_vocab;
using dialtree::testing::cased_vocab;

namespace fs = std::filesystem;
using dialtree::testing::TempDir;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using dialtree::testing::error_of;

/// A hand-written WordPiece bundle in `dir`: `vocab` copied to vocab.txt, tokenizer.json with
/// BERT's ids and the given casing, plus `extra` merged into the JSON.
void write_wordpiece_bundle(const std::string& dir, const std::string& vocab, bool lower_case,
                            const json& extra = json::object()) {
  fs::create_directories(dir);
  fs::copy_file(vocab, fs::path(dir) / "vocab.txt", fs::copy_options::overwrite_existing);
  json j = {{"format", "dialtree-tokenizer/1"},
            {"type", "wordpiece"},
            {"vocab_file", "vocab.txt"},
            {"lower_case", lower_case},
            {"normalization", "bert_basic"},
            {"special_tokens",
             {{"pad", 0},
              {"unk", 100},
              {"cls", 101},
              {"sep", 102},
              {"mask", 103},
              {"sos_u", 13},
              {"eos_u", 7},
              {"sos_r", 14},
              {"eos_r", 8}}}};
  j.update(extra);
  std::ofstream(fs::path(dir) / "tokenizer.json") << j.dump(2);
}

// ---- bug 8: WordPiece casing must match the vocabulary ------------------------------------------

TEST(WordPieceCasing, UncasedVocabularyWithLowerCaseFalseIsRejected) {
  TempDir tmp;
  write_wordpiece_bundle(tmp.file("wp"), bert_vocab(), /*lower_case=*/false);
  try {
    load_tokenizer(tmp.file("wp"));
    FAIL() << "a cased bundle over bert-base-uncased loaded (\"May\" would become [UNK])";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "lower_case");
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json"));
    EXPECT_THAT(e.what(), HasSubstr("no token with an upper-case letter"));
    EXPECT_THAT(e.what(), HasSubstr("uncased vocabulary"));
  }
  // The same vocabulary lower-casing, as its settings should say, maps "May" to "may".
  write_wordpiece_bundle(tmp.file("ok"), bert_vocab(), /*lower_case=*/true);
  EXPECT_EQ(load_tokenizer(tmp.file("ok"))->encode("May"), std::vector<std::int32_t>{2089});
}

TEST(WordPieceCasing, CasedVocabularyWithLowerCaseTrueIsRejected) {
  TempDir tmp;
  const std::string vocab = cased_vocab(tmp);
  write_wordpiece_bundle(tmp.file("wp"), vocab, /*lower_case=*/true);
  try {
    load_tokenizer(tmp.file("wp"));
    FAIL() << "a lower-casing bundle over a cased vocabulary loaded";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "lower_case");
    EXPECT_THAT(e.what(), HasSubstr("cased vocabulary"));
    EXPECT_THAT(e.what(), HasSubstr("3000 of the"));
  }
  write_wordpiece_bundle(tmp.file("ok"), vocab, /*lower_case=*/false);
  const auto tok = load_tokenizer(tmp.file("ok"));
  EXPECT_NE(tok->encode("May"), std::vector<std::int32_t>{tok->special().unk});
}

// ---- bug 15: tokenizer.json paths and keys
// -------------------------------------------------------

TEST(TokenizerJson, FilesOutsideTheBundleAndUnknownKeysAreRejected) {
  TempDir tmp;
  for (const std::string bad : {"../vocab.txt", "sub/../../vocab.txt", "..", "/etc/passwd", ""}) {
    write_wordpiece_bundle(tmp.file("wp"), bert_vocab(), true, {{"vocab_file", bad}});
    try {
      load_tokenizer(tmp.file("wp"));
      ADD_FAILURE() << bad << " accepted";
    } catch (const DataError& e) {
      EXPECT_EQ(e.field(), "vocab_file") << bad;
      EXPECT_THAT(e.what(), HasSubstr("inside the bundle folder")) << bad;
    }
  }
  // A file in a sub-folder of the bundle is fine.
  write_wordpiece_bundle(tmp.file("sub"), bert_vocab(), true, {{"vocab_file", "v/vocab.txt"}});
  fs::create_directories(tmp.file("sub/v"));
  fs::copy_file(bert_vocab(), tmp.file("sub/v/vocab.txt"));
  EXPECT_EQ(load_tokenizer(tmp.file("sub"))->vocab_size(), 30522);

  write_wordpiece_bundle(tmp.file("k"), bert_vocab(), true, {{"lowercase", true}});
  try {
    load_tokenizer(tmp.file("k"));
    ADD_FAILURE() << "unknown key accepted";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "lowercase");
    EXPECT_THAT(e.what(), HasSubstr("unknown key"));
  }
  // A field of the other tokenizer type is unknown too.
  write_wordpiece_bundle(tmp.file("m"), bert_vocab(), true, {{"model_file", "spm.model"}});
  EXPECT_THROW(load_tokenizer(tmp.file("m")), DataError);
  const json sp = {{"format", "dialtree-tokenizer/1"}, {"type", "sentencepiece"},
                   {"model_file", "../spm.model"},     {"lower_case", false},
                   {"normalization", "nmt_nfkc"},      {"special_tokens", json::object()}};
  try {
    tokenizer_config_from_json(sp, "t.json");
    ADD_FAILURE() << "model_file escaping the bundle accepted";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "model_file");
  }
}

// ---- bug 10 / 16: unreadable inputs say why
// -------------------------------------------------------

TEST(TokenizerInputs, DirectoriesAndMissingFilesSayWhy) {
  TempDir tmp;
  EXPECT_THAT(error_of<TokenizerError>([&] { WordPieceTokenizer w(tmp.path().string()); }),
              HasSubstr("is a directory"));
  EXPECT_THAT(error_of<TokenizerError>([&] { SentencePieceTokenizer s(tmp.path().string()); }),
              HasSubstr("is a directory"));
  SentencePieceTrainOptions o;
  o.out_dir = tmp.file("out");
  o.vocab_size = 100;
  o.inputs = {tmp.file("missing.txt")};
  EXPECT_EQ(
      error_of<TokenizerError>([&] { train_sentencepiece(o); }),
      "cannot open training input '" + tmp.file("missing.txt") + "': No such file or directory");
  o.inputs = {tmp.path().string()};
  EXPECT_THAT(error_of<TokenizerError>([&] { train_sentencepiece(o); }),
              HasSubstr("': is a directory, not a file"));
}

// ---- bug 7: options checked first, with dialtree's flag names
// ------------------------------------

TEST(TrainOptions, RangesNameTheFlags) {
  TempDir tmp;
  SentencePieceTrainOptions o;
  o.inputs = {tmp.file("c.txt")};
  o.out_dir = tmp.file("out");
  auto msg = [&](auto change) {
    SentencePieceTrainOptions c = o;
    change(c);
    return error_of<TokenizerError>([&] { train_sentencepiece(c); });
  };
  const std::string max = std::to_string(max_sentencepiece_threads());
  EXPECT_EQ(msg([](auto& c) { c.num_threads = 0; }),
            "--threads 0 must be in [1, " + max + "] (the CPUs of this machine, at most 128)");
  EXPECT_THAT(msg([](auto& c) { c.num_threads = 100000; }), HasSubstr("--threads 100000"));
  EXPECT_EQ(msg([](auto& c) { c.character_coverage = std::nan(""); }),
            "--character-coverage nan must be in [0.98, 1]");
  EXPECT_EQ(msg([](auto& c) { c.character_coverage = 0.5; }),
            "--character-coverage 0.5 must be in [0.98, 1]");
  EXPECT_THAT(msg([](auto& c) { c.character_coverage = 1.01; }), HasSubstr("--character-coverage"));
  EXPECT_EQ(msg([](auto& c) { c.vocab_size = 9; }), "--vocab-size 9 must be in [16, 1048576]");
  EXPECT_THAT(msg([](auto& c) { c.out_dir = ""; }), HasSubstr("--out must not be empty"));
  EXPECT_THAT(msg([](auto& c) { c.max_sentence_length = 2; }),
              HasSubstr("--max-sentence-length 2 must be >= 10"));
  // Nothing was created: validation comes before --out is touched or the corpus read.
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  EXPECT_LE(max_sentencepiece_threads(), 128);
  EXPECT_GE(max_sentencepiece_threads(), 1);
}

/// Writes the first `n` lines of the real pre-training corpus.
void write_corpus(const std::string& path, int n) {
  std::ifstream in(dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
  std::ofstream out(path);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out << line << '\n';
}

TEST(TrainBundle, TooLargeAVocabularyNamesTheFlagAndKeepsTheOldBundle) {
  TempDir tmp;
  write_corpus(tmp.file("c.txt"), 300);
  SentencePieceTrainOptions o;
  o.inputs = {tmp.file("c.txt")};
  o.out_dir = tmp.file("tok");
  o.vocab_size = 100;
  const SentencePieceTrainResult first = train_sentencepiece(o);
  EXPECT_EQ(first.model_path, tmp.file("tok") + "/spm.model");
  const std::string model = slurp(first.model_path);
  ASSERT_FALSE(model.empty());

  o.vocab_size = 50000;
  const std::string message = error_of<TokenizerError>([&] { train_sentencepiece(o); });
  EXPECT_THAT(message, HasSubstr("--vocab-size 50000 is too large for this corpus"));
  EXPECT_THAT(message, HasSubstr("set --vocab-size"));
  EXPECT_THAT(message, Not(HasSubstr(" vocab_size")));
  // The earlier bundle is untouched and nothing temporary is left beside it.
  EXPECT_EQ(slurp(first.model_path), model);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"c.txt", "tok"}));

  // A successful run replaces the bundle as a whole (a stale extra piece of it disappears).
  fs::remove(tmp.file("tok/spm.vocab"));
  o.vocab_size = 120;
  train_sentencepiece(o);
  EXPECT_TRUE(fs::exists(tmp.file("tok/spm.vocab")));
  EXPECT_NE(slurp(first.model_path), model);
  EXPECT_EQ(load_tokenizer(tmp.file("tok"))->vocab_size(), 120);
}

TEST(TrainBundle, AnUnusableOutFailsBeforeTraining) {
  TempDir tmp;
  write_corpus(tmp.file("c.txt"), 50);
  SentencePieceTrainOptions o;
  o.inputs = {tmp.file("c.txt")};
  o.vocab_size = 60;
  // A folder that holds other files is not replaced.
  fs::create_directories(tmp.file("busy"));
  std::ofstream(tmp.file("busy/notes.txt")) << "keep me";
  o.out_dir = tmp.file("busy");
  EXPECT_THAT(error_of<TokenizerError>([&] { train_sentencepiece(o); }),
              HasSubstr("already exists and holds 'notes.txt'"));
  EXPECT_EQ(slurp(tmp.file("busy/notes.txt")), "keep me");
  // A regular file, or a place below one, cannot become the bundle folder.
  o.out_dir = tmp.file("c.txt");
  EXPECT_THAT(error_of<TokenizerError>([&] { train_sentencepiece(o); }),
              HasSubstr("is a regular file, not a directory"));
  o.out_dir = tmp.file("c.txt/sub");
  EXPECT_THAT(error_of<TokenizerError>([&] { train_sentencepiece(o); }),
              HasSubstr("cannot write the bundle to --out"));
  EXPECT_EQ(fs::file_size(tmp.file("c.txt")) > 0, true);
}

}  // namespace
}  // namespace dialtree::data
