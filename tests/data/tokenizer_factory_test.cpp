// tokenizer.json bundles (docs/failure-cases.md C17): settings travel with the model and are never
// defaulted.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer_factory.h"
#include "data/wordpiece.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using dialtree::testing::bert_vocab;
using dialtree::testing::cased_vocab;

using nlohmann::json;
using ::testing::HasSubstr;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

void write_json(const std::string& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(2);
}

/// Trains a 500-piece unigram model on the first 5000 real corpus lines into `dir`.
SentencePieceTrainResult train_small(const dialtree::testing::TempDir& tmp, const std::string& dir,
                                     const std::string& normalization) {
  std::ifstream in(dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
  std::ofstream out(tmp.file("head.txt"));
  std::string line;
  for (int i = 0; i < 5000 && std::getline(in, line); ++i) out << line << '\n';
  out.close();
  SentencePieceTrainOptions o;
  o.inputs = {tmp.file("head.txt")};
  o.out_dir = tmp.file(dir);
  o.vocab_size = 500;
  o.normalization = normalization;
  return train_sentencepiece(o);
}

/// Expects `fn` to throw DataError whose field is `field` and whose message names `file`.
template <typename Fn>
void expect_data_error(Fn&& fn, const std::string& field, const std::string& file) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(file));
  }
}

// C17: a cased model saved by the trainer and reloaded from its bundle gives the trainer's ids.
TEST(TokenizerBundle, C17CasedSentencePieceRoundTripsThroughTheBundle) {
  dialtree::testing::TempDir tmp;
  const auto r = train_small(tmp, "cased", "nmt_nfkc");
  const SentencePieceTokenizer trained(r.model_path);

  const json cfg = read_json(r.config_path);
  EXPECT_EQ(cfg["format"], "dialtree-tokenizer/1");
  EXPECT_EQ(cfg["type"], "sentencepiece");
  EXPECT_EQ(cfg["model_file"], "spm.model");
  EXPECT_EQ(cfg["lower_case"], false);
  EXPECT_EQ(cfg["normalization"], "nmt_nfkc");
  EXPECT_EQ(cfg["special_tokens"],
            json::parse(R"({"pad":0,"unk":1,"cls":2,"sep":3,"mask":4,"sos_u":5,"eos_u":6,)"
                        R"("sos_r":7,"eos_r":8})"));

  const std::unique_ptr<Tokenizer> served = load_tokenizer(tmp.file("cased"));
  ASSERT_EQ(served->type(), "sentencepiece");
  const std::string text = "it is May 1st today";
  const auto ids = served->encode(text);
  EXPECT_EQ(ids, trained.encode(text));
  EXPECT_EQ(served->decode(ids), text);
  EXPECT_NE(served->encode("May"), served->encode("may"));
  EXPECT_EQ(served->special().cls, 2);
  EXPECT_EQ(served->special().eos_r, 8);
  const auto* sp = dynamic_cast<const SentencePieceTokenizer*>(served.get());
  ASSERT_NE(sp, nullptr);
  EXPECT_FALSE(sp->lower_case());

  // Moving the bundle keeps it loadable: paths inside are relative.
  std::filesystem::rename(tmp.file("cased"), tmp.file("moved"));
  EXPECT_EQ(load_tokenizer(tmp.file("moved"))->encode(text), ids);
}

TEST(TokenizerBundle, LowerCasingSentencePieceRecordsIt) {
  dialtree::testing::TempDir tmp;
  const auto r = train_small(tmp, "uncased", "nmt_nfkc_cf");
  const json cfg = read_json(r.config_path);
  EXPECT_EQ(cfg["lower_case"], true);
  EXPECT_EQ(cfg["normalization"], "nmt_nfkc_cf");
  const auto tok = load_tokenizer(tmp.file("uncased"));
  EXPECT_EQ(tok->encode("it is May 1st today"), tok->encode("it is may 1st today"));
}

TEST(TokenizerBundle, SentencePieceSettingsThatContradictTheModelAreRejected) {
  dialtree::testing::TempDir tmp;
  const auto r = train_small(tmp, "b", "nmt_nfkc");
  const json good = read_json(r.config_path);
  const std::string dir = tmp.file("b");

  json j = good;
  j["lower_case"] = true;  // the C17 bug: a cased model described as lower-casing
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "lower_case", "tokenizer.json");

  j = good;
  j["normalization"] = "nmt_nfkc_cf";
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "normalization", "tokenizer.json");

  j = good;
  j["special_tokens"]["cls"] = 3;
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "special_tokens.cls", "tokenizer.json");

  j = good;
  j["special_tokens"]["eos_r"] = 500;
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "special_tokens.eos_r", "tokenizer.json");

  j = good;
  j["special_tokens"].erase("mask");
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "special_tokens.mask", "tokenizer.json");

  j = good;
  j["special_tokens"]["bos"] = 9;
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "special_tokens.bos", "tokenizer.json");

  j = good;
  j["lower_case"] = "no";
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "lower_case", "tokenizer.json");

  j = good;
  j["format"] = "dialtree-tokenizer/2";
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "format", "tokenizer.json");

  j = good;
  j["type"] = "bytes";
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "type", "tokenizer.json");

  j = good;
  j["model_file"] = "/etc/spm.model";
  write_json(r.config_path, j);
  expect_data_error([&] { load_tokenizer(dir); }, "model_file", "tokenizer.json");

  j = good;
  j["model_file"] = "other.model";
  write_json(r.config_path, j);
  EXPECT_THROW(load_tokenizer(dir), TokenizerError);

  write_json(r.config_path, good);
  EXPECT_NO_THROW(load_tokenizer(dir));
}

TEST(TokenizerBundle, MissingSettingsFileFailsToLoad) {
  dialtree::testing::TempDir tmp;
  std::filesystem::copy_file(bert_vocab(), tmp.file("vocab.txt"));
  expect_data_error([&] { load_tokenizer(tmp.path().string()); }, "", "tokenizer.json");
  {
    std::ofstream out(tmp.file("tokenizer.json"));
    out << "{\"format\": ";
  }
  expect_data_error([&] { load_tokenizer(tmp.path().string()); }, "", "tokenizer.json");
}

TEST(TokenizerBundle, C17CasedWordPieceBundleLoadsCased) {
  dialtree::testing::TempDir tmp;
  WordPieceOptions cased;
  cased.lower_case = false;
  // The uncased vocabulary cannot be a cased bundle (every capitalised word would be [UNK]).
  expect_data_error([&] { save_wordpiece_tokenizer_config(tmp.file("wp"), bert_vocab(), cased); },
                    "lower_case", "tokenizer.json");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("wp/vocab.txt")));
  const std::string vocab = cased_vocab(tmp);
  save_wordpiece_tokenizer_config(tmp.file("wp"), vocab, cased);

  const json cfg = read_json(tmp.file("wp/tokenizer.json"));
  EXPECT_EQ(cfg["type"], "wordpiece");
  EXPECT_EQ(cfg["vocab_file"], "vocab.txt");
  EXPECT_EQ(cfg["lower_case"], false);
  EXPECT_EQ(cfg["normalization"], "bert_basic");
  EXPECT_EQ(cfg["special_tokens"]["sos_u"], 13);
  EXPECT_EQ(cfg["special_tokens"]["eos_u"], 7);
  EXPECT_EQ(cfg["special_tokens"]["sos_r"], 14);
  EXPECT_EQ(cfg["special_tokens"]["eos_r"], 8);
  EXPECT_EQ(cfg["special_tokens"]["cls"], 101);
  EXPECT_EQ(std::filesystem::file_size(tmp.file("wp/vocab.txt")),
            std::filesystem::file_size(vocab));

  const auto tok = load_tokenizer(tmp.file("wp"));
  const auto* wp = dynamic_cast<const WordPieceTokenizer*>(tok.get());
  ASSERT_NE(wp, nullptr);
  EXPECT_FALSE(wp->options().lower_case);
  EXPECT_EQ(tok->special().sos_u, 13);
  EXPECT_EQ(tok->special().unk, 100);
  // Cased: "May" is its own entry, not "may" (id 2089), and not [UNK].
  EXPECT_NE(tok->encode("May"), tok->encode("may"));
  EXPECT_EQ(tok->encode("may"), std::vector<std::int32_t>{2089});
  EXPECT_EQ(tok->encode("May"), std::vector<std::int32_t>{tok->token_to_id("May")});

  // The default (uncased) bundle lower-cases, as its settings say.
  save_wordpiece_tokenizer_config(tmp.file("wp-uncased"), bert_vocab());
  EXPECT_EQ(read_json(tmp.file("wp-uncased/tokenizer.json"))["lower_case"], true);
  const auto uncased = load_tokenizer(tmp.file("wp-uncased"));
  EXPECT_EQ(uncased->encode("May"), std::vector<std::int32_t>{2089});
}

TEST(TokenizerBundle, WordPieceSpecialIdsAreCheckedAgainstTheVocab) {
  dialtree::testing::TempDir tmp;
  WordPieceOptions wrong;
  wrong.special.cls = 100;  // [UNK], not [CLS]
  expect_data_error([&] { save_wordpiece_tokenizer_config(tmp.file("x"), bert_vocab(), wrong); },
                    "special_tokens.cls", "tokenizer.json");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("x/vocab.txt")));

  WordPieceOptions not_alias;
  not_alias.special.sos_u = 2089;  // "may": neither <sos_u> nor an [unusedK] alias
  expect_data_error(
      [&] { save_wordpiece_tokenizer_config(tmp.file("y"), bert_vocab(), not_alias); },
      "special_tokens.sos_u", "tokenizer.json");

  WordPieceOptions twice;
  twice.special.eos_r = 7;  // same as eos_u
  expect_data_error([&] { save_wordpiece_tokenizer_config(tmp.file("z"), bert_vocab(), twice); },
                    "special_tokens.eos_r", "tokenizer.json");

  // A hand-edited bundle claiming lower_case=false for the same vocab loads cased; one with a
  // SentencePiece normalisation rule is rejected.
  save_wordpiece_tokenizer_config(tmp.file("w"), bert_vocab());
  json j = read_json(tmp.file("w/tokenizer.json"));
  j["normalization"] = "nmt_nfkc";
  write_json(tmp.file("w/tokenizer.json"), j);
  expect_data_error([&] { load_tokenizer(tmp.file("w")); }, "normalization", "tokenizer.json");
}

TEST(TokenizerBundle, ConfigJsonRoundTrip) {
  TokenizerConfig c;
  c.type = "wordpiece";
  c.vocab_file = "vocab.txt";
  c.lower_case = true;
  c.normalization = "bert_basic";
  c.unk_token = "[UNK]";
  c.max_input_chars_per_word = 64;
  const auto j = tokenizer_config_to_json(c);
  EXPECT_EQ(j.begin().key(), "format");
  const TokenizerConfig back = tokenizer_config_from_json(json::parse(j.dump()), "t.json");
  EXPECT_EQ(back.type, "wordpiece");
  EXPECT_EQ(back.vocab_file, "vocab.txt");
  EXPECT_TRUE(back.lower_case);
  EXPECT_EQ(back.max_input_chars_per_word, 64u);
  EXPECT_EQ(back.special.sos_u, 13);
  EXPECT_EQ(back.special.mask, 103);
}

}  // namespace
}  // namespace dialtree::data
